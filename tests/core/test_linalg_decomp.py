"""d2s.linalg decompositions, solves and norms (d2s/core/ops/linalg_decomp.py,
linalg_funcs.py): values vs numpy.linalg, gradients by finite differences of
the numpy reference (symmetric inputs where the op reads one triangle;
eigen/singular vectors sign-normalized), numpy and xla conversion, unknown
dims, ONNX Runtime for the composites of ops it has."""
import numpy as np
import pytest

import d2s
from d2s import linalg as L
from ops_check import check

R = np.random.default_rng(21)


def m(*s):
    return R.standard_normal(s)


def spd(a):  # numpy: a symmetric positive-definite matrix made from a
    return a @ np.swapaxes(a, -1, -2) + 3 * np.eye(a.shape[-1])


def d_spd(a):
    return d2s.matmul(a, a, transpose_y=True) + d2s.to_tensor(3 * np.eye(3))  # (3 x 3 inputs)


def d_sym(a):
    return (a + a.transpose([1, 0])) * 0.5


def n_sign(v):  # eigen/singular vectors: the first row made non-negative
    return v * np.where(v[..., :1, :] < 0, -1.0, 1.0)


def d_sign(v):
    return v * d2s.where(v[..., :1, :] < 0, -1.0 + v[..., :1, :] * 0, 1.0 + v[..., :1, :] * 0)


def _scipy_linalg():  # the LU reference (LAPACK's getrf); skipped without scipy
    return pytest.importorskip("scipy.linalg")


def _ref_lu(a):  # packed factors, 1-based pivots, infos (all 0 here)
    sl = _scipy_linalg()
    out = [sl.lu_factor(t) for t in a]
    return (np.stack([f[0] for f in out]), np.stack([f[1] + 1 for f in out]).astype(np.int32),
            np.zeros(len(a), np.int32))


A3, B32, A233 = m(3, 3), m(3, 2), m(2, 3, 3)
NO_ONNX = {"onnx": False}
INF = np.inf
CASES = [
    ("det_batch", L.det, [A233], np.linalg.det, NO_ONNX),
    ("slogdet", L.slogdet, [A3], lambda a: np.stack(np.linalg.slogdet(a)), NO_ONNX),
    ("solve", L.solve, [A3 + 3 * np.eye(3), B32], np.linalg.solve, NO_ONNX),
    ("solve_vector", L.solve, [A3 + 3 * np.eye(3), m(3)], np.linalg.solve, NO_ONNX),
    ("solve_broadcast", L.solve, [A3 + 3 * np.eye(3), m(2, 3, 2)],
     lambda a, b: np.linalg.solve(np.broadcast_to(a, (2, 3, 3)), b), NO_ONNX),
    ("cholesky", lambda a: L.cholesky(d_spd(a)), [A3],
     lambda a: np.linalg.cholesky(spd(a)), NO_ONNX),
    ("cholesky_upper", lambda a: L.cholesky(d_spd(a), upper=True), [A3],
     lambda a: np.linalg.cholesky(spd(a)).T, NO_ONNX),
    ("qr_tall", L.qr, [m(4, 3)], lambda a: np.linalg.qr(a), NO_ONNX),
    ("qr_r", lambda a: L.qr(a, mode="r"), [m(3, 3)], lambda a: np.linalg.qr(a, mode="r"),
     NO_ONNX),
    ("svd_values", lambda a: L.svd(a)[1], [m(2, 4, 3)], lambda a: np.linalg.svd(a)[1],
     NO_ONNX),
    ("svd_vectors", lambda a: (L.svd(a)[0].abs(), L.svd(a)[2].abs()), [m(4, 3)],
     lambda a: tuple(np.abs(t) for t in np.linalg.svd(a, full_matrices=False)[::2]),
     dict(onnx=False, grad=False)),
    ("eigh", lambda a: (L.eigh(d_sym(a))[0], d_sign(L.eigh(d_sym(a))[1])), [A3],
     lambda a: (np.linalg.eigh((a + a.T) / 2)[0], n_sign(np.linalg.eigh((a + a.T) / 2)[1])),
     NO_ONNX),
    ("eigvalsh_upper", lambda a: L.eigvalsh(d_sym(a), "U"), [A3],
     lambda a: np.linalg.eigvalsh((a + a.T) / 2, "U"), NO_ONNX),
    ("matrix_power", lambda a: (L.matrix_power(a, 3), L.matrix_power(a, 0)), [A233],
     lambda a: (np.linalg.matrix_power(a, 3), np.broadcast_to(np.eye(3), a.shape)), {}),
    ("matrix_power_negative", lambda a: L.matrix_power(a, -2), [A3 + 3 * np.eye(3)],
     lambda a: np.linalg.matrix_power(a, -2), NO_ONNX),
    ("multi_dot", lambda a, b, c, d: L.multi_dot([a, b, c, d]), [m(3), A3, B32, m(2)],
     lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]), {}),
    ("vector_norm", lambda a: (L.vector_norm(a), L.vector_norm(a, 3, axis=1),
                               L.vector_norm(a, INF, axis=[0, 2], keepdim=True),
                               L.vector_norm(a, 0, axis=-1)),
     [A233], lambda a: (np.linalg.norm(a.ravel()), np.sum(np.abs(a) ** 3, 1) ** (1 / 3),
                        np.max(np.abs(a), axis=(0, 2), keepdims=True),
                        np.count_nonzero(a, -1).astype(a.dtype)), {}),
    ("matrix_norm", lambda a: (L.matrix_norm(a), L.matrix_norm(a, 1), L.matrix_norm(a, -INF),
                               L.matrix_norm(a, "fro", axis=(0, 2), keepdim=True)),
     [A233], lambda a: (np.linalg.norm(a, "fro", (-2, -1)), np.linalg.norm(a, 1, (-2, -1)),
                        np.linalg.norm(a, -INF, (-2, -1)),
                        np.linalg.norm(a, "fro", (0, 2), keepdims=True)), {}),
    ("matrix_norm_svd", lambda a: (L.matrix_norm(a, "nuc"), L.matrix_norm(a, 2),
                                   L.matrix_norm(a, -2, axis=(0, 2))),
     [A233], lambda a: (np.linalg.norm(a, "nuc", (-2, -1)), np.linalg.norm(a, 2, (-2, -1)),
                        np.linalg.norm(a, -2, (0, 2))), NO_ONNX),
    ("triangular_solve", lambda a, b: (L.triangular_solve(a, b),
                                       L.triangular_solve(a, b, upper=False, transpose=True),
                                       L.triangular_solve(a, b, unitriangular=True)),
     [A3 + 3 * np.eye(3), B32],
     lambda a, b: (np.linalg.solve(np.triu(a), b), np.linalg.solve(np.tril(a).T, b),
                   np.linalg.solve(np.triu(a, 1) + np.eye(3), b)), NO_ONNX),
    ("cholesky_solve", lambda b, a: (L.cholesky_solve(b, a),
                                     L.cholesky_solve(b, a.transpose([1, 0]), upper=True)),
     [B32, np.tril(A3) + 3 * np.eye(3)],
     lambda b, a: (np.linalg.solve(np.tril(a) @ np.tril(a).T, b),) * 2, NO_ONNX),
    ("pinv", lambda a: (L.pinv(a), L.pinv(a.transpose([0, 2, 1]))), [m(2, 4, 3)],
     lambda a: (np.linalg.pinv(a), np.linalg.pinv(np.swapaxes(a, 1, 2))), NO_ONNX),
    ("lstsq_tall", lambda a, b: L.lstsq(a, b, driver="gelsd"), [m(1, 5, 3), m(1, 5, 2)],
     lambda a, b: tuple(np.asarray(t)[None] for t in np.linalg.lstsq(a[0], b[0])[:2])
     + (np.array([3], np.int32), np.linalg.lstsq(a[0], b[0])[3][None]),
     dict(onnx=False, unknown="first")),
    ("lstsq_wide_min_norm", lambda a, b: L.lstsq(a, b)[:3], [m(1, 2, 4), m(1, 2, 1)],
     lambda a, b: (np.linalg.lstsq(a[0], b[0])[0][None], np.zeros(0), np.array([2], np.int32)),
     dict(onnx=False, unknown="first")),
    ("lu", lambda a: L.lu(a, get_infos=True), [m(2, 4, 3)], lambda a: _ref_lu(a),
     dict(onnx=False, grad=False)),
    ("lu_singular_and_unpack", lambda a: L.lu(a, get_infos=True)[2:] + L.lu_unpack(*L.lu(a)),
     [np.array([[0.0, 2.0, 1.0], [0.0, 1.0, 3.0], [0.0, 4.0, 1.0]])],
     lambda a: (np.int32(1),) + tuple(_scipy_linalg().lu(a)),
     dict(onnx=False, grad=False, unknown_dims=False)),   # (unpacking needs the dims)
    ("tensor_methods", lambda a, b: (a.matrix_power(2), a.solve(b), a.triangular_solve(b),
                                     d_sym(a).eigvalsh(), d2s.complex(a, a * 2).imag(),
                                     d_spd(a).cholesky()),
     [A3 + 3 * np.eye(3), B32],
     lambda a, b: (a @ a, np.linalg.solve(a, b), np.linalg.solve(np.triu(a), b),
                   np.linalg.eigvalsh((a + a.T) / 2), 2 * a, np.linalg.cholesky(spd(a))),
     NO_ONNX),
    ("eig_general", lambda a: (L.eigvals(a), a.eig()[1].abs()), [m(2, 3, 3)],
     lambda a: (np.linalg.eig(a)[0].astype(complex), np.abs(np.linalg.eig(a)[1])),
     dict(onnx=False, grad=False)),
    ("cond", lambda a: (L.cond(a), L.cond(a, -2), L.cond(a, "fro"), L.cond(a, 1)), [A233],
     lambda a: (np.linalg.cond(a), np.linalg.cond(a, -2), np.linalg.cond(a, "fro"),
                np.linalg.cond(a, 1)), NO_ONNX),
    ("matrix_rank", lambda a: (L.matrix_rank(a), L.matrix_rank(a, tol=0.5)),
     [np.array([[1.0, 2, 3], [2, 4, 6], [0, 1, 1]])],
     lambda a: (np.linalg.matrix_rank(a), np.linalg.matrix_rank(a, tol=0.5)), NO_ONNX),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_linalg(case):
    name, fn, arrays, ref, options = case
    check(fn, arrays, ref, **{"rtol": 1e-6, "grad_rtol": 1e-4, **options})


def test_linalg_errors():
    x = d2s.to_tensor(m(3, 3), stop_gradient=False)
    with pytest.raises(np.linalg.LinAlgError):
        L.cholesky(d2s.to_tensor(-np.eye(2)))
    w, v = L.eig(d2s.to_tensor(np.array([[0.0, -1.0], [1.0, 0.0]])))  # a rotation: +-i
    np.testing.assert_allclose(np.sort_complex(w.numpy()), [-1j, 1j], atol=1e-12)
    a = np.array([[0.0, -1.0], [1.0, 0.0]])
    np.testing.assert_allclose(a @ v.numpy(), v.numpy() * w.numpy(), atol=1e-12)
    with pytest.raises(ValueError, match="square"):
        L.det(d2s.to_tensor(m(2, 3)))
    # xla: a matrix that is not positive-definite raises numpy's error too
    sf = d2s.jit.to_static(lambda a: L.cholesky(a), backend="xla")
    with pytest.raises(np.linalg.LinAlgError):
        sf(d2s.to_tensor(-np.eye(2)))
