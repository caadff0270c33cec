"""examples/llama: the Llama-style decoder trains the same eagerly and as a
converted whole step (bitwise on numpy, to float tolerance on xla), its loss
falls, a checkpoint resumes the run exactly, and a checkpoint of another
config is refused naming the differing keys."""
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from examples.llama.model import LlamaConfig, LlamaForCausalLM  # noqa: E402
from examples.llama.train import Trainer  # noqa: E402



def tiny(**kw):
    base = dict(vocab_size=256, hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    base.update(kw)
    return LlamaConfig(**base)


def run(mode, backend="numpy", steps=4, **kw):
    tr = Trainer(tiny(**kw), steps=steps, warmup=2, batch_size=2, seq_len=8, seed=3,
                 mode=mode, backend=backend)
    return tr, [tr.train_step() for _ in range(steps)]


@pytest.mark.parametrize("tie", [False, True], ids=["untied", "tied"])
def test_static_step_is_bitwise_eager_on_numpy(tie):
    eager, le = run("eager", tie_word_embeddings=tie)
    static, ls = run("static", tie_word_embeddings=tie)
    assert le == ls                                          # bitwise
    assert len(static._step.program_cache) == 1
    for (n, a), (_, b) in zip(eager.model.named_parameters(), static.model.named_parameters()):
        assert np.array_equal(a.numpy(), b.numpy()), n


def test_static_step_matches_eager_on_xla(monkeypatch):
    pytest.importorskip("jax")
    monkeypatch.setenv("D2S_XLA_SYNC", "1")
    _, le = run("eager", steps=3)
    _, lx = run("static", backend="xla", steps=3)
    np.testing.assert_allclose(lx, le, rtol=1e-4)


def test_loss_falls_below_the_unigram_entropy_soon():
    from examples.llama import data
    tr = Trainer(tiny(hidden_size=32, intermediate_size=64), steps=60, warmup=5, lr=1e-2,
                 batch_size=8, seq_len=16, seed=0, mode="static")
    first = tr.held_out_loss()
    for _ in range(60):
        tr.train_step()
    after = tr.held_out_loss()
    assert first > 5.0                                       # about log(256) at start
    assert after < data.unigram_entropy(tr.train_tokens)     # uses context already
    assert np.mean(tr.losses[-10:]) < np.mean(tr.losses[:10]) - 1.5


def test_resume_continues_identically(tmp_path):
    whole, losses = run("static", steps=6)
    first = Trainer(tiny(), steps=6, warmup=2, batch_size=2, seq_len=8, seed=3, mode="static")
    for _ in range(3):
        first.train_step()
    first.save(tmp_path / "ckpt.npz")
    resumed = Trainer(tiny(), steps=6, warmup=2, batch_size=2, seq_len=8, seed=99,
                      mode="static")
    resumed.load(tmp_path / "ckpt.npz")
    assert resumed.step_count == 3
    for _ in range(3):
        resumed.train_step()
    assert resumed.losses == losses                          # bitwise, numpy backend
    for (n, a), (_, b) in zip(whole.model.named_parameters(), resumed.model.named_parameters()):
        assert np.array_equal(a.numpy(), b.numpy()), n


def test_checkpoint_of_another_config_is_refused(tmp_path):
    tr = Trainer(tiny(), steps=2, warmup=1, batch_size=2, seq_len=8, mode="eager")
    tr.save(tmp_path / "c.npz")
    other = Trainer(tiny(hidden_size=32, intermediate_size=24), steps=2, warmup=1,
                    batch_size=2, seq_len=8, mode="eager")
    with pytest.raises(ValueError, match=r"another LlamaConfig.*hidden_size: checkpoint 16 vs "
                                         r"run 32"):
        other.load(tmp_path / "c.npz")


def test_config_checks_head_sizes():
    with pytest.raises(ValueError, match="num_key_value_heads"):
        LlamaConfig(num_attention_heads=4, num_key_value_heads=3)
    with pytest.raises(ValueError, match="num_attention_heads"):
        LlamaConfig(hidden_size=30, num_attention_heads=4)


def test_script_trains_plots_reports_and_resumes(tmp_path, capsys):
    from examples.llama import train
    args = ["--steps", "2", "--d-model", "16", "--ffn", "24", "--layers", "1", "--seq-len", "8",
            "--batch", "2", "--warmup", "1", "--save", str(tmp_path / "a.npz")]
    pytest.importorskip("matplotlib")
    tr = train.main(args + ["--plot", str(tmp_path / "loss.png"), "--quant-report"])
    assert (tmp_path / "loss.png").stat().st_size > 1000 and len(tr.losses) == 2
    report = capsys.readouterr().out
    assert re.search(r"int8 +held-out perplexity +\d+\.\d+ +weights read .*\(\d+% of fp32; "
                     r"rotary tables \d+\.\d KiB of it\)", report)
    tr2 = train.main([a if a != "2" else "3" for a in args[:2]] + args[2:]
                     + ["--resume", str(tmp_path / "a.npz")])
    assert tr2.losses[:2] == tr.losses and len(tr2.losses) == 3


def test_scripts_answer_help_as_scripts():
    for script, option in (("train.py", "--resume"), ("export_onnx.py", "--new-tokens")):
        proc = subprocess.run([sys.executable, str(ROOT / "examples" / "llama" / script),
                               "--help"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "usage:" in proc.stdout and option in proc.stdout
