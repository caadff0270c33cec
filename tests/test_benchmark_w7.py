"""benchmarks/workloads.py W7 (compare_modes' CNN training row): the converted
whole step, the eager step and the hand-written numpy twin
(benchmarks/cnn_numpy.py: im2col convolutions, batch norm and max pooling
differentiated by hand) give the same loss and the same updated weights from
the same start; torch's twin too, where torch imports."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

import d2s  # noqa: E402
from d2s.jit import enable_to_static  # noqa: E402

import workloads  # noqa: E402


def _step(wl, mode):
    wl.reset()
    if mode == "numpy":  # (copied: the next reset rewrites the twin's arrays)
        return float(wl.numpy_call()), [a.copy() for a in wl.state("numpy")]
    enable_to_static(mode == "static")
    try:
        return float(wl.call().numpy()), [a.copy() for a in wl.state("d2s")]
    finally:
        enable_to_static(True)


def test_w7_steps_agree_on_loss_and_weights():
    d2s.seed(0)
    wl = workloads.WORKLOADS["W7"](np.random.default_rng(0))
    by_hand = _step(wl, "numpy")
    for mode in ("static", "eager"):
        loss, weights = _step(wl, mode)
        np.testing.assert_allclose(loss, by_hand[0], rtol=1e-5, err_msg=mode)
        for got, want in zip(weights, by_hand[1]):
            np.testing.assert_allclose(got, want, rtol=wl.rtol, atol=wl.atol, err_msg=mode)


def test_w7_torch_twin_agrees():
    pytest.importorskip("torch")
    import others
    d2s.seed(0)
    wl = workloads.WORKLOADS["W7"](np.random.default_rng(0))
    modes, errors = others.modes_for("W7", wl.np_args, ["torch"])
    assert not errors, errors
    wl.reset()
    np.testing.assert_allclose(float(modes["torch"]()), float(wl.numpy_call()), rtol=1e-5)
