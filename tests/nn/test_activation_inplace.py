"""Paddle's in-place activations of nn.functional (`F.relu_`, `F.elu_`, ...):
values vs the out-of-place activation, identity and version kept,
gradients through the write vs finite differences, and eager vs converted
code on the numpy and xla backends (the argument's name is rebound there,
through any module path)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s.static.backend import BackendFallbackWarning

rng = np.random.default_rng(5)
A = rng.standard_normal((2, 3)) * 2.0
A[np.abs(A) < 0.2] += 0.5     # no kinks within the finite-difference step
A[np.abs(A - 1.0) < 0.2] += 0.5


def _softmax(a, axis=-1):
    e = np.exp(a - a.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


CASES = [
    ("relu_", lambda x: F.relu_(x), lambda a: np.maximum(a, 0)),
    ("elu_", lambda x: F.elu_(x, 0.5), lambda a: np.where(a > 0, a, 0.5 * np.expm1(a))),
    ("leaky_relu_", lambda x: F.leaky_relu_(x, 0.1), lambda a: np.where(a > 0, a, 0.1 * a)),
    ("hardtanh_", lambda x: F.hardtanh_(x, -0.5, 1.5), lambda a: np.clip(a, -0.5, 1.5)),
    ("softmax_", lambda x: F.softmax_(x, axis=0), lambda a: _softmax(a, 0)),
    ("tanh_", lambda x: F.tanh_(x), np.tanh),
    ("thresholded_relu_", lambda x: F.thresholded_relu_(x, 1.0),
     lambda a: np.where(a > 1.0, a, 0.0)),
]


def test_functional_exports_paddles_inplace_activations():
    from d2s.convert.transformers import inplace_methods
    from d2s.nn import activation_inplace
    assert set(inplace_methods.ACTIVATION_INPLACE_NAMES) == set(activation_inplace.__all__)
    for name in activation_inplace.__all__:
        assert callable(getattr(F, name)) and name in F.__all__


@pytest.mark.parametrize("name, call, ref", CASES, ids=[c[0] for c in CASES])
def test_inplace_activation_writes_and_differentiates(name, call, ref):
    w = d2s.to_tensor(A, stop_gradient=False)
    x = w * 1.0
    before = x.inplace_version
    got = call(x)
    assert got is x and x.inplace_version == before + 1
    np.testing.assert_allclose(x.numpy(), ref(A), rtol=1e-12, atol=1e-15)
    r = rng.standard_normal(A.shape)
    (x * d2s.to_tensor(r)).sum().backward()
    eps, fd = 1e-6, np.zeros_like(A)
    for j in np.ndindex(A.shape):
        hi, lo = A.copy(), A.copy()
        hi[j] += eps
        lo[j] -= eps
        fd[j] = (np.sum(ref(hi) * r) - np.sum(ref(lo) * r)) / (2 * eps)
    np.testing.assert_allclose(w.grad.numpy(), fd, rtol=1e-5, atol=1e-6)


def test_inplace_activation_on_a_leaf_requiring_grad_raises():
    p = d2s.to_tensor(A, stop_gradient=False)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        F.relu_(p)


def test_elu_inplace_refuses_a_negative_alpha():
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        F.elu_(d2s.to_tensor(A), -1.0)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_inplace_activations_equal_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")

    def f(x):
        h = x * 1.0
        F.leaky_relu_(h, 0.2)
        if h.sum() > 0:
            d2s.nn.functional.hardtanh_(h, -0.3, 0.9)
        g = h * 2.0
        F.softmax_(g, axis=-1)
        y = F.tanh_(h) * 2.0               # written first, then read
        F.relu_(h)
        return h + y + g
    want = f(d2s.to_tensor(A)).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        got = d2s.jit.to_static(f, backend=backend)(d2s.to_tensor(A))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    h = np.clip(np.where(A > 0, A, 0.2 * A), -0.3, 0.9) if np.where(
        A > 0, A, 0.2 * A).sum() > 0 else np.where(A > 0, A, 0.2 * A)
    g = _softmax(h * 2.0)
    t = np.tanh(h)
    np.testing.assert_allclose(want, np.maximum(t, 0) + 2 * t + g, rtol=1e-12)


def _write_argument(x):
    F.relu_(x)
    return x * 2.0


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_inplace_activation_reaches_the_callers_tensor(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    a = d2s.to_tensor(A)
    got = d2s.jit.to_static(_write_argument, backend=backend)(a)
    np.testing.assert_allclose(got.numpy(), 2.0 * np.maximum(A, 0))
    np.testing.assert_allclose(a.numpy(), np.maximum(A, 0))
