"""benchmarks/llm_profile.py: the XLA kernels of a tiny model's greedy
generation, sorted into kinds; the Linear layers' matmuls and the
attention over the cache are found, and the kinds share the whole."""
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def test_profile_finds_the_matmuls_and_the_attention(capsys):
    pytest.importorskip("jax")
    import llm_profile
    per_kind = llm_profile.main(["--quick", "--batch", "2", "--prompt", "4", "--new", "4"])
    assert any(k.startswith("Linear matmuls") for k in per_kind)
    assert per_kind["attention (scores, softmax, probs @ v)"] > 0
    shares = [float(line.split("%")[0].split()[-1]) for line in capsys.readouterr().out.splitlines()
              if "%" in line]
    assert abs(sum(shares) - 100) < 0.5
