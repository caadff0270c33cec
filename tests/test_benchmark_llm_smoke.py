"""Smoke test of benchmarks/llm.py: a --quick run (tiny model, 8 tokens) of
every row that imports here checks the rows' greedy tokens equal before
timing them, and prints a table within 100 columns."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "llm.py")


def test_llm_benchmark_quick(tmp_path):
    out = tmp_path / "llm.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--quick", "--batches", "1", "--json",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    timed = set(data["rows"])
    assert {"eager", "numpy"} <= timed, data["skipped"]
    # every row either timed (its tokens equal d2s eager's) or skipped with a reason
    assert timed | set(data["skipped"]) == {"eager", "numpy", "xla", "xla_int8", "torch",
                                            "jax", "onnxruntime"}
    assert all(data["skipped"].values())
    for name, entry in data["rows"].items():
        assert entry["1"]["first_token_s"] > 0 and entry["1"]["whole_s"] > 0, name
    if "torch" in timed:
        assert data["torch_logits_rel_diff"] < 1e-5
    assert "check: greedy tokens equal for d2s eager" in proc.stdout
    assert max(map(len, proc.stdout.splitlines())) <= 100, proc.stdout


def test_llm_benchmark_help():
    proc = subprocess.run([sys.executable, SCRIPT, "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "--quick" in proc.stdout and "torch.compile" in proc.stdout
