"""Gradients of complex products, quotients and matrix products read the other operand's
conjugate (PyTorch's convention: the gradient of a real loss w.r.t. z is
dL/dRe z + i dL/dIm z), so real parameters built into complex tensors get
their true derivatives: eager and converted (numpy, xla) vs PyTorch."""
import warnings

import numpy as np
import pytest

import d2s
from d2s.static.backend import BackendFallbackWarning

torch = pytest.importorskip("torch")
R = np.random.default_rng(41)
PARTS = [R.standard_normal((2, 2)) for _ in range(4)]


def _loss(a, b, c, d, complex_, re, im, matmul):
    z, y = complex_(a, b), complex_(c, d)
    p, q, r = z * y, z / y, matmul(z, y)
    return (re(p) * 1.5 + im(p) * 0.7 + re(q) * 0.3 - im(q) * 1.1 + re(z * z)
            + re(r) * 0.9 - im(r) * 0.4 + re(matmul(z, a)) * a).sum()


def _torch_grads():
    ts = [torch.tensor(v, requires_grad=True) for v in PARTS]
    _loss(*ts, torch.complex, lambda v: v.real, lambda v: v.imag,
          lambda u, v: u @ (v.to(u.dtype) if v.dtype != u.dtype else v)).backward()
    return [t.grad.numpy() for t in ts]


def _d2s_grads(*ts):
    loss = _loss(*ts, d2s.complex, lambda v: v.real(), lambda v: v.imag(), d2s.matmul)
    return d2s.grad(loss, list(ts))


@pytest.mark.parametrize("backend", [None, "numpy", "xla"])
def test_complex_product_and_quotient_gradients_match_torch(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    ts = [d2s.to_tensor(v, stop_gradient=False) for v in PARTS]
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        fn = _d2s_grads if backend is None else d2s.jit.to_static(_d2s_grads, backend=backend)
        got = fn(*ts)
    for g, w in zip(got, _torch_grads()):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-10)
