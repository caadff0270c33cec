"""Gradients of the matrix decompositions beyond their values: svd through U
and V^T (reduced; full when square), qr of wide inputs and complete mode
with rows <= cols, lu's packed factors (square, tall, wide) and through
lu_unpack, eig of real matrices (complex eigenpairs; phase-free losses). Checked by finite differences of the numpy / scipy reference on
well-conditioned inputs, with losses that do not depend on the sign of a
singular pair (U^2, V^2, U diag(w) V^T); values and the gradient in
converted code on the numpy and xla backends, unknown dims."""
import warnings

import numpy as np
import pytest

import d2s
from d2s import linalg as L
from d2s.static.backend import BackendFallbackWarning
from ops_check import check

R = np.random.default_rng(31)


def m(*s):
    return R.standard_normal(s)


def _svd_gauge_free(a, w):
    """U^2, V^T^2 and U diag(w) V^T: unchanged when a pair (u_i, v_i) flips."""
    u, s, vh = L.svd(a)
    return u * u, vh * vh, d2s.matmul(u * w, vh), s


def _svd_gauge_free_np(a, w):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return u * u, vh * vh, (u * w) @ vh, s


def _lu_packed_np(a):
    sl = pytest.importorskip("scipy.linalg")
    out = []
    for t in a.reshape((-1,) + a.shape[-2:]):
        _, low, up = sl.lu(t)
        k = min(t.shape)
        packed = np.zeros(t.shape)
        packed[:, :k] += np.tril(low, -1)
        packed[:k, :] += np.triu(up)
        out.append(packed)
    return np.stack(out).reshape(a.shape)


def _lu_unpack_np(a):
    sl = pytest.importorskip("scipy.linalg")
    return sl.lu(a)[1:]


def _eig_parts(a):
    w, v = L.eig(a)
    return w.real(), w.imag(), v.abs() ** 2


def _eig_parts_np(a):
    w, v = np.linalg.eig(a)
    return w.real, w.imag, np.abs(v) ** 2


EIG_REAL = np.random.default_rng(0).standard_normal((3, 3))     # real eigenvalues
EIG_PAIRS = np.random.default_rng(1).standard_normal((2, 3, 3))  # the first: a complex pair
NO_ONNX = {"onnx": False}
CASES = [
    ("svd_tall", lambda a, w: _svd_gauge_free(a, w), [m(4, 3), m(3)], _svd_gauge_free_np,
     NO_ONNX),
    ("svd_wide_batch", lambda a, w: _svd_gauge_free(a, w), [m(2, 2, 4), m(2)],
     _svd_gauge_free_np, NO_ONNX),
    ("svd_square_full", lambda a: tuple(t * t for t in L.svd(a, full_matrices=True)[::2]),
     [m(3, 3)], lambda a: tuple(t * t for t in np.linalg.svd(a)[::2]), NO_ONNX),
    ("qr_wide", L.qr, [m(2, 4)], np.linalg.qr, NO_ONNX),
    ("qr_wide_batch_complete", lambda a: L.qr(a, mode="complete"), [m(2, 3, 4)],
     lambda a: np.linalg.qr(a, mode="complete"), NO_ONNX),
    ("lu_square", lambda a: L.lu(a)[0], [m(2, 3, 3)], _lu_packed_np,
     dict(onnx=False, unknown_dims=False)),
    ("lu_tall", lambda a: L.lu(a)[0], [m(4, 2)], _lu_packed_np,
     dict(onnx=False, unknown_dims=False)),
    ("lu_wide", lambda a: L.lu(a)[0], [m(2, 4)], _lu_packed_np,
     dict(onnx=False, unknown_dims=False)),
    ("eig_real_spectrum", _eig_parts, [EIG_REAL], _eig_parts_np, NO_ONNX),
    ("eig_complex_pairs", _eig_parts, [EIG_PAIRS], _eig_parts_np, NO_ONNX),
    ("lu_unpack", lambda a: L.lu_unpack(*L.lu(a))[1:], [m(3, 3)], _lu_unpack_np,
     dict(onnx=False, unknown_dims=False)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_decomposition_gradient(case):
    name, fn, arrays, ref, options = case
    check(fn, arrays, ref, **{"rtol": 1e-6, "grad_rtol": 1e-4, **options})


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_svd_vector_gradient_in_converted_code(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    a, w = m(3, 2), m(2)

    def step(x):
        u, s, vh = L.svd(x)
        loss = d2s.sum(d2s.matmul(u * d2s.to_tensor(w), vh) ** 2) + d2s.sum(u * u * 0.5)
        return d2s.grad(loss, x)[0]

    x = d2s.to_tensor(a, stop_gradient=False)
    want = step(x).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        got = d2s.jit.to_static(step, backend=backend)(d2s.to_tensor(a, stop_gradient=False))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-9, atol=1e-12)


def test_ill_defined_gradients_stay_clear_errors():
    x = d2s.to_tensor(m(4, 2), stop_gradient=False)
    with pytest.raises(NotImplementedError, match="full_matrices=True of a non-square"):
        d2s.sum(L.svd(x, full_matrices=True)[0]).backward()
    x = d2s.to_tensor(m(4, 2), stop_gradient=False)
    with pytest.raises(NotImplementedError, match="mode='complete' with rows > cols"):
        d2s.sum(L.qr(x, mode="complete")[0]).backward()
