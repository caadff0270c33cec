"""The examples run, and eager and static training print the same losses (the
last loss of each model with all its digits: the whole-step program is
bitwise eager)."""
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run(*args):
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "train.py"), *args],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_train_example_same_losses_in_both_modes(tmp_path):
    outs = {m: _run("--mode", m, "--epochs", "1", "--out", str(tmp_path / m))
            for m in ("eager", "static")}
    losses = {m: re.findall(r"loss (\d+\.\d+)", o) for m, o in outs.items()}
    assert len(losses["eager"]) > 10
    assert losses["eager"] == losses["static"]
    exact = {m: re.findall(r"last \w+ loss (\d+\.\d+)", o) for m, o in outs.items()}
    assert len(exact["eager"]) == 2 and exact["eager"] == exact["static"]
    for o in outs.values():
        assert "reloaded models agree with the trained ones: mlp True, rnn True" in o
    assert (tmp_path / "static" / "rnn.json").exists()


def test_demo_runs():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py"), "--repeat", "20"],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "max |eager - static| = 0.00e+00" in proc.stdout
    # the headline: the converted function and step give the eager results, the
    # program is printed, and both modes are timed
    assert "equal results: True" in proc.stdout and "same losses: True" in proc.stdout
    assert "while(" in proc.stdout and proc.stdout.count("µs/call") == 4


def test_deploy_onnx_example_serves_equal_outputs(tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "deploy_onnx.py"),
                           "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ONNX Runtime agrees with d2s: mlp True, rnn True" in proc.stdout
    assert (tmp_path / "mlp.onnx").exists() and (tmp_path / "rnn.onnx").exists()
    blocks = re.findall(r"d2s +(\[.*\])\n +onnxruntime +(\[.*\])", proc.stdout)
    assert len(blocks) == 5 and all(a == b for a, b in blocks)
