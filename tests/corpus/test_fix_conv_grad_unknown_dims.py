"""Regression (found by the corpus's TextCNN): a convolution over an input
whose spatial dims are unknown when the program is built (`InputSpec` with
`None` length, Conv1D and Conv2D) is differentiable with stride 1 — every
input row is read by a window, so the output size fixes the input's — and
gives eager's gradients on numpy (bitwise) and xla; with a larger stride the
gradient op reads the input's size when it runs (trailing rows no window
reads may follow the output's reach)."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s.static import InputSpec

BACKENDS = ["numpy", pytest.param("xla", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("jax") is None, reason="needs jax"))]


def close(actual, expected, backend, what):
    if backend == "numpy":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=2e-6, err_msg=what)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("padding, dilation", [(0, 1), (1, 1), (2, 2)])
@pytest.mark.parametrize("length", [5, 8])
def test_conv1d_gradient_with_unknown_length(backend, padding, dilation, length):
    rng = np.random.default_rng(length)
    x = rng.normal(size=(2, 3, length)).astype("float32")
    w = rng.normal(size=(4, 3, 3)).astype("float32")

    def f(x, w):
        return (F.conv1d(x, w, padding=padding, dilation=dilation) ** 2).sum()

    grads = []
    for fn in (f, d2s.jit.to_static(f, backend=backend, input_spec=[
            InputSpec([None, 3, None]), InputSpec([4, 3, 3])])):
        xt, wt = (d2s.to_tensor(a, stop_gradient=False) for a in (x, w))
        loss = fn(xt, wt)
        loss.backward()
        grads.append((loss.numpy(), xt.grad.numpy(), wt.grad.numpy()))
    for what, a, e in zip(("loss", "x grad", "w grad"), grads[1], grads[0]):
        close(a, e, backend, what)


@pytest.mark.parametrize("backend", BACKENDS)
def test_conv2d_gradient_with_unknown_height_and_width(backend):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 2, 5, 6)).astype("float32")
    w = rng.normal(size=(3, 2, 3, 3)).astype("float32")

    def f(x, w):
        return d2s.tanh(F.conv2d(x, w, padding=1)).sum()

    xe = d2s.to_tensor(x, stop_gradient=False)
    f(xe, w_e := d2s.to_tensor(w, stop_gradient=False)).backward()
    fs = d2s.jit.to_static(f, backend=backend, input_spec=[InputSpec([None, 2, None, None]),
                                                           InputSpec([3, 2, 3, 3])])
    xs, ws = d2s.to_tensor(x, stop_gradient=False), d2s.to_tensor(w, stop_gradient=False)
    fs(xs, ws).backward()
    close(xs.grad.numpy(), xe.grad.numpy(), backend, "x grad")
    close(ws.grad.numpy(), w_e.grad.numpy(), backend, "w grad")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("length", [7, 8])
def test_strided_conv_gradient_with_unknown_length(backend, length):
    """Stride 2: an 8-long input leaves a last row no window reads (the
    gradient op reads the input's length when it runs); a 7-long one none."""
    rng = np.random.default_rng(length)
    x = rng.normal(size=(1, 3, length)).astype("float32")
    w = rng.normal(size=(4, 3, 3)).astype("float32")

    def f(x, w):
        return (F.conv1d(x, w, stride=2) ** 2).sum()

    grads = []
    for fn in (f, d2s.jit.to_static(f, backend=backend, input_spec=[
            InputSpec([None, 3, None]), InputSpec([4, 3, 3])])):
        xt, wt = (d2s.to_tensor(a, stop_gradient=False) for a in (x, w))
        fn(xt, wt).backward()
        grads.append((xt.grad.numpy(), wt.grad.numpy()))
    for what, a, e in zip(("x grad", "w grad"), grads[1], grads[0]):
        close(a, e, backend, what)
    if length == 8:
        assert not grads[1][0][..., -1].any()
