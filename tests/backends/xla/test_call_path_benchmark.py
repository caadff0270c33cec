"""Smoke test of benchmarks/xla_call_path.py (where an xla call spends its
time, layer by layer): every layer of a forward and of a training step is
timed, next to the JAX twins."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("jax")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(ROOT, "benchmarks", "xla_call_path.py")


def test_call_path_benchmark_times_every_layer():
    proc = subprocess.run([sys.executable, SCRIPT, "--workloads", "W2,W6", "--rounds", "2",
                           "--calls", "1"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()[1:]]
    for key in ("W2", "W6"):
        modes = {" ".join(r[1:-3]) for r in rows if r[0] == key}
        # (a forward also has the floor: unwrap, the executable, wrap)
        assert modes == {"to_static xla", "per-call path", "executable", "jax.jit np",
                         "jax.jit"} | ({"floor"} if key == "W2" else set())
        assert all(float(r[-1]) > 0 for r in rows if r[0] == key)
