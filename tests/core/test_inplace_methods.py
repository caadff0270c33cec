"""Paddle's in-place methods (`add_`, `scale_`, `reshape_`, ...): values vs
the out-of-place op, identity and version of the Tensor, gradients through
the write vs finite differences, the leaf error, and eager vs converted
code on the numpy and xla backends (the name is rebound there)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import d2s
from d2s.core import inplace
from d2s.static.backend import BackendFallbackWarning

rng = np.random.default_rng(2)
A = np.abs(rng.standard_normal((2, 3))) + 0.5
B = rng.standard_normal((2, 3))

# (method call on x, numpy reference)
CASES = [
    ("add_", lambda x, y: x.add_(y), lambda a, b: a + b),
    ("subtract_", lambda x, y: x.subtract_(y), lambda a, b: a - b),
    ("multiply_", lambda x, y: x.multiply_(y), lambda a, b: a * b),
    ("divide_", lambda x, y: x.divide_(y * y + 1.0), lambda a, b: a / (b * b + 1.0)),
    ("scale_", lambda x, y: x.scale_(2.0, 0.5), lambda a, b: a * 2.0 + 0.5),
    ("clip_", lambda x, y: x.clip_(0.6, 1.0), lambda a, b: np.clip(a, 0.6, 1.0)),
    ("exp_", lambda x, y: x.exp_(), lambda a, b: np.exp(a)),
    ("sqrt_", lambda x, y: x.sqrt_(), lambda a, b: np.sqrt(a)),
    ("tanh_", lambda x, y: x.tanh_(), lambda a, b: np.tanh(a)),
    ("zero_", lambda x, y: x.zero_(), lambda a, b: np.zeros_like(a)),
    ("fill_", lambda x, y: x.fill_(3.0), lambda a, b: np.full_like(a, 3.0)),
    ("reshape_", lambda x, y: x.reshape_([3, 2]), lambda a, b: a.reshape(3, 2)),
    ("unsqueeze_", lambda x, y: x.unsqueeze_(0), lambda a, b: a[None]),
    ("squeeze_", lambda x, y: x.unsqueeze_(1).squeeze_(1), lambda a, b: a),
    ("flatten_", lambda x, y: x.flatten_(), lambda a, b: a.reshape(-1)),
    ("d2s.reshape_", lambda x, y: d2s.reshape_(x, [6]), lambda a, b: a.reshape(6)),
    ("d2s.unsqueeze_", lambda x, y: d2s.unsqueeze_(x, -1), lambda a, b: a[..., None]),
]


@pytest.mark.parametrize("name, call, ref", CASES, ids=[c[0] for c in CASES])
def test_inplace_method_rebinds_and_differentiates(name, call, ref):
    w = d2s.to_tensor(A, stop_gradient=False)
    x = w * 1.0
    got = call(x, d2s.to_tensor(B))
    assert got is x and x.inplace_version >= 1
    np.testing.assert_allclose(x.numpy(), ref(A, B), rtol=1e-12)
    r = rng.standard_normal(x.shape)
    (x * d2s.to_tensor(r)).sum().backward()
    eps, fd = 1e-6, np.zeros_like(A)
    for j in np.ndindex(A.shape):
        hi, lo = A.copy(), A.copy()
        hi[j] += eps
        lo[j] -= eps
        fd[j] = (np.sum(ref(hi, B) * r) - np.sum(ref(lo, B) * r)) / (2 * eps)
    got_grad = np.zeros_like(A) if w.grad is None else w.grad.numpy()
    np.testing.assert_allclose(got_grad, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_inplace_methods_equal_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")

    def f(x, y):
        h = x * 1.0
        h.add_(y)
        h.scale_(0.5)
        if h.sum() > 0:
            h.clip_(-0.2, 0.2)
        z = h.reshape_([3, 2])
        d2s.unsqueeze_(h, 0)
        return h + z.sum()
    want = f(d2s.to_tensor(A), d2s.to_tensor(B)).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        got = d2s.jit.to_static(f, backend=backend)(d2s.to_tensor(A), d2s.to_tensor(B))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    assert tuple(got.shape) == (1, 3, 2)


def test_inplace_on_a_leaf_requiring_grad_raises_and_no_grad_allows_it():
    p = d2s.to_tensor(A, stop_gradient=False)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        p.add_(1.0)
    with d2s.no_grad():
        p.scale_(2.0)
    np.testing.assert_allclose(p.numpy(), 2.0 * A)
    assert p.is_leaf and not p.stop_gradient


def test_inplace_that_would_grow_the_tensor_is_an_error():
    x = d2s.to_tensor(np.ones((1, 3)))
    with pytest.raises(ValueError, match="must keep the tensor's shape"):
        x.add_(d2s.to_tensor(np.ones((2, 3))))


def test_converter_knows_every_inplace_name_of_the_core():
    from d2s.convert.transformers import inplace_methods
    assert tuple(inplace_methods.INPLACE_NAMES) == tuple(inplace.INPLACE_NAMES)


def test_inplace_method_on_a_program_value_outside_converted_code_is_an_error():
    from d2s import static
    with static.program_guard(static.Program()):
        x = static.data("x", [2, 3], "float64")
        with pytest.raises(TypeError, match=r"cannot be changed in place outside converted"):
            x.add_(1.0)
        with pytest.raises(TypeError, match=r"cannot be changed in place"):
            x[0] = 1.0
