"""Smoke test of benchmarks/xla_grad_paths.py (the measurement behind keeping
d2s's own backward on xla rather than `jax.vjp`): both paths give the same
gradients on the MLP, and JAX refuses reverse mode through the RNN's while."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("jax")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(ROOT, "benchmarks", "xla_grad_paths.py")


def test_grad_paths_benchmark_runs_and_agrees():
    proc = subprocess.run([sys.executable, SCRIPT, "--calls", "2"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    agree = float(proc.stdout.split("agree to ")[1].split()[0])
    assert agree < 1e-5
    assert "jax.grad of the lowered forward: fails" in proc.stdout
    assert "Reverse-mode differentiation" in proc.stdout
