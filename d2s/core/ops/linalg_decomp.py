"""Matrix decompositions and solves behind `d2s.linalg`: det, slogdet,
solve, cholesky, qr, svd, eigh. Each is a primitive (LAPACK through numpy,
jnp.linalg on xla) with the standard matrix-calculus gradient, written
with d2s ops so that it also builds in a static program:

* det: d det / dA = det * A^-T; slogdet: d log|det| / dA = A^-T;
* solve (A Z = B): dB = A^-T G, dA = -dB Z^T;
* cholesky (A = L L^T): dA = sym(L^-T Phi(L^T G) L^-1), Phi the lower
  triangle with its diagonal halved (the input read as symmetric);
* qr (reduced, rows >= cols): the triangular-solve form of the QR rule;
* eigh (distinct eigenvalues): dA = V (diag(gw) + F o (V^T gV)) V^T with
  F_ij = 1 / (w_j - w_i), symmetrized;
* pinv (P = A^+, its rank held fixed): dA = -P^T G P^T + (I - A P) G^T P P^T
  + P^T P G^T (I - P A);
* eig (general matrices, complex results): values only;
* lu: values only (its gradient raises NotImplementedError);
* svd: through the singular values only (dA = U diag(gS) V^H); a gradient
  through U or V^H raises NotImplementedError (it is undefined where
  singular values repeat, and sign-ambiguous everywhere).
"""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ._base import cast_like, lift, unbroadcast
from .linalg import matmul
from .linalg_more import _swap_last as _mT, inverse

__all__ = ["det", "slogdet", "solve", "cholesky", "qr", "svd", "eigh", "pinv", "lu", "lu_unpack", "eig", "eigvals"]


def _float_of(dtype):
    return np.linalg.inv(np.eye(2, dtype=dtype)).dtype  # ints: float64


def _square(x, what):
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"{what}: x must be at least 2-D [..., M, M], got {list(shape)}")
    a, b = shape[-2:]
    if a is not None and b is not None and a != b:
        raise ValueError(f"{what}: the last two dims of x {list(shape)} must be square")
    return shape


def _eye_like(m):
    """The identity shaped like the square matrices `m` (dims may be unknown)."""
    from .creation import ones_like
    from .shaping import tril, triu
    return tril(triu(ones_like(m)))


def _sym(m):
    return (m + _mT(m)) * 0.5


def _float_input(x):
    x = lift(x)
    dt = _float_of(x.dtype)
    if np.dtype(x.dtype) != dt:
        from .elementwise import cast
        x = cast(x, dt)
    return x


# ---- det / slogdet -----------------------------------------------------------------------
def _det_infer(x):
    return Aval(_square(x, "det")[:-2], _float_of(x.dtype))


def _unsq2(v):
    from .manipulation import unsqueeze
    return unsqueeze(unsqueeze(v, -1), -1)


def _det_vjp(g, out, x):
    return (cast_like(_unsq2(g * out) * _mT(inverse(x)), x),)


register_op("det", lambda x: np.asarray(np.linalg.det(x)), _det_infer, vjp=_det_vjp)


def det(x, name=None):
    """Determinant of each square matrix in the last two dims of `x`; its
    gradient needs an invertible matrix."""
    x = _float_input(x)
    _det_infer(x)
    return bind("det", x)


def _slogdet_kernel(x):
    sign, logabs = np.linalg.slogdet(x)
    return np.asarray(sign), np.asarray(logabs)


def _slogdet_infer(x):
    a = Aval(_square(x, "slogdet")[:-2], _float_of(x.dtype))
    return a, a


def _slogdet_vjp(g, out, x):
    _, g_log = g
    if g_log is None:
        return (None,)
    return (cast_like(_unsq2(g_log) * _mT(inverse(x)), x),)


register_op("slogdet", _slogdet_kernel, _slogdet_infer, vjp=_slogdet_vjp, num_outputs=2)


def slogdet(x, name=None):
    """Paddle's slogdet: one tensor [2, *batch] stacking the sign of the
    determinant and the log of its absolute value (a more stable log det)."""
    from .manipulation import stack
    x = _float_input(x)
    _slogdet_infer(x)
    sign, logabs = bind("slogdet", x)
    return stack([sign, logabs], axis=0)


# ---- solve ---------------------------------------------------------------------------------
def _solve_infer(x, y):
    from ..shapes import broadcast_shapes
    xs = _square(x, "solve")
    ys = tuple(y.shape)
    dt = np.result_type(_float_of(x.dtype), _float_of(y.dtype))
    if len(ys) == 1:
        if len(xs) != 2:
            raise ValueError(f"solve: a 1-D y needs a 2-D x, got x {list(xs)}")
        return Aval(ys, dt)
    if len(ys) < 2:
        raise ValueError(f"solve: y must be [..., M, K] or [M], got {list(ys)}")
    batch = broadcast_shapes(xs[:-2], ys[:-2], opname="solve")
    return Aval(tuple(batch) + ys[-2:], dt)


def _solve_vjp(g, out, x, y):
    from .manipulation import unsqueeze
    gy = bind("solve", _mT(x), g)
    if len(y.shape) == 1:
        gx = -(unsqueeze(gy, -1) * unsqueeze(out, 0))
    else:
        gx = -matmul(gy, _mT(out))
    return cast_like(unbroadcast(gx, x), x), cast_like(unbroadcast(gy, y), y)


register_op("solve", lambda x, y: np.linalg.solve(x, y), _solve_infer, vjp=_solve_vjp,
            checks=True)


def solve(x, y, name=None):
    """Z with x @ Z = y for square x ([..., M, M]) and y [..., M, K] (batch
    dims broadcast) or [M]; a singular x raises numpy's LinAlgError."""
    x, y = _float_input(x), _float_input(y)
    aval = _solve_infer(x, y)
    from .elementwise import cast
    if np.dtype(x.dtype) != aval.dtype:
        x = cast(x, aval.dtype)
    if np.dtype(y.dtype) != aval.dtype:
        y = cast(y, aval.dtype)
    return bind("solve", x, y)


# ---- cholesky ------------------------------------------------------------------------------
def _cholesky_infer(x):
    return Aval(_square(x, "cholesky"), _float_of(x.dtype))


def _phi(m):
    """The lower triangle of `m` with its diagonal halved."""
    from .shaping import tril
    return tril(m, -1) + tril(m) * _eye_like(m) * 0.5


def _cholesky_vjp(g, out, x):
    l_inv = inverse(out)
    s = matmul(matmul(_mT(l_inv), _phi(matmul(_mT(out), g))), l_inv)
    return (cast_like(_sym(s), x),)


register_op("cholesky", lambda x: np.linalg.cholesky(x), _cholesky_infer, vjp=_cholesky_vjp,
            checks=True)


def cholesky(x, upper=False, name=None):
    """The Cholesky factor of each symmetric positive-definite matrix of `x`
    (its lower triangle is read): lower L with x = L L^T, or with `upper`
    U = L^T. A matrix that is not positive-definite raises LinAlgError."""
    x = _float_input(x)
    _cholesky_infer(x)
    out = bind("cholesky", x)
    return _mT(out) if upper else out


# ---- qr ------------------------------------------------------------------------------------
def _qr_infer(x, mode):
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"qr: x must be at least 2-D, got {list(shape)}")
    m, n = shape[-2:]
    k = None if m is None or n is None else min(m, n)
    dt = _float_of(x.dtype)
    if mode == "complete":
        return Aval(shape[:-2] + (m, m), dt), Aval(shape[:-2] + (m, n), dt)
    return Aval(shape[:-2] + (m, k), dt), Aval(shape[:-2] + (k, n), dt)


def _qr_kernel(x, mode):
    q, r = np.linalg.qr(x, mode=mode)
    return q, r


def _qr_vjp(g, out, x, mode):
    from .shaping import tril
    g_q, g_r = g
    q, r = out
    m, n = x.shape[-2:]
    if mode == "complete" and (m is None or n is None or m > n) or \
            (m is not None and n is not None and m < n):
        raise NotImplementedError(
            "qr: the gradient is implemented for mode='reduced' with rows >= cols (the "
            "rule for wide or complete factorizations is not unique); use a tall input")
    if g_q is None:
        g_q = q * 0.0
    if g_r is None:
        g_r = r * 0.0
    qdq = matmul(_mT(q), g_q)
    rdr = matmul(r, _mT(g_r))
    low = tril(qdq - _mT(qdq) + rdr - _mT(rdr))
    r_inv_t = _mT(inverse(r))
    ga = matmul(q, g_r + matmul(low, r_inv_t)) + matmul(g_q - matmul(q, qdq), r_inv_t)
    return (cast_like(ga, x),)


register_op("qr", _qr_kernel, _qr_infer, vjp=_qr_vjp, num_outputs=2)


def qr(x, mode="reduced", name=None):
    """QR factorization of the matrices of `x` ([..., M, N]): (Q, R) with Q's
    columns orthonormal and R upper triangular; `mode` "reduced" (K = min(M,
    N) columns), "complete" (Q is M x M) or "r" (R alone)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    x = _float_input(x)
    q, r = bind("qr", x, mode="reduced" if mode == "r" else mode)
    return r if mode == "r" else (q, r)


# ---- svd -----------------------------------------------------------------------------------
def _svd_infer(x, full_matrices):
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"svd: x must be at least 2-D, got {list(shape)}")
    m, n = shape[-2:]
    k = None if m is None or n is None else min(m, n)
    dt = _float_of(x.dtype)
    b = shape[:-2]
    if full_matrices:
        return Aval(b + (m, m), dt), Aval(b + (k,), dt), Aval(b + (n, n), dt)
    return Aval(b + (m, k), dt), Aval(b + (k,), dt), Aval(b + (k, n), dt)


def _svd_kernel(x, full_matrices):
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    return u, s, vh


def _svd_vjp(g, out, x, full_matrices):
    from .manipulation import unsqueeze
    g_u, g_s, g_vh = g
    if g_u is not None or g_vh is not None:
        raise NotImplementedError(
            "svd: gradients through U or VH are not supported (they are undefined where "
            "singular values repeat); differentiate a function of the singular values S only "
            "(e.g. matrix_norm(x, 'nuc'), or svd(x)[1])")
    u, _, vh = out
    if full_matrices:
        k = g_s.shape[-1]
        if k is None:
            raise NotImplementedError("svd: the gradient with full_matrices=True needs known "
                                      "matrix dims")
        u, vh = u[..., :k], vh[..., :k, :]
    return (cast_like(matmul(u * unsqueeze(g_s, -2), vh), x),)


register_op("svd", _svd_kernel, _svd_infer, vjp=_svd_vjp, num_outputs=3)


def svd(x, full_matrices=False, name=None):
    """(U, S, VH) with x = U diag(S) VH, S descending (Paddle's svd)."""
    x = _float_input(x)
    return bind("svd", x, full_matrices=bool(full_matrices))


# ---- eigh ----------------------------------------------------------------------------------
def _eigh_infer(x, uplo):
    shape = _square(x, "eigh")
    dt = _float_of(x.dtype)
    return Aval(shape[:-1], dt), Aval(shape, dt)


def _eigh_kernel(x, uplo):
    w, v = np.linalg.eigh(x, UPLO=uplo)
    return w, v


def _eigh_vjp(g, out, x, uplo):
    from .manipulation import unsqueeze
    g_w, g_v = g
    w, v = out
    eye = _eye_like(v)
    inner = eye * 0.0 if g_w is None else unsqueeze(g_w, -1) * eye
    if g_v is not None:
        diff = unsqueeze(w, -2) - unsqueeze(w, -1)           # [i, j]: w_j - w_i
        f = (1.0 - eye) / (diff + eye)
        inner = inner + f * matmul(_mT(v), g_v)
    return (cast_like(_sym(matmul(matmul(v, inner), _mT(v))), x),)


register_op("eigh", _eigh_kernel, _eigh_infer, vjp=_eigh_vjp, num_outputs=2)


def eigh(x, UPLO="L", name=None):
    """(eigenvalues ascending, eigenvectors as columns) of each symmetric
    matrix of `x`, reading its lower (`UPLO="L"`) or upper triangle. The
    gradient assumes distinct eigenvalues and a symmetric input."""
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    x = _float_input(x)
    return bind("eigh", x, uplo=UPLO)


# ---- pinv ----------------------------------------------------------------------------------
def _pinv_infer(x, rcond, hermitian):
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"pinv: x must be at least 2-D, got {list(shape)}")
    return Aval(shape[:-2] + (shape[-1], shape[-2]), _float_of(x.dtype))


def _pinv_vjp(g, out, x, rcond, hermitian):
    p, pt, gt = out, _mT(out), _mT(g)
    ap, pa = matmul(x, p), matmul(p, x)
    ga = (-matmul(matmul(pt, g), pt)
          + matmul(matmul(_eye_like(ap) - ap, gt), matmul(p, pt))
          + matmul(matmul(pt, p), matmul(gt, _eye_like(pa) - pa)))
    return (cast_like(ga, x),)


register_op("pinv", lambda x, rcond, hermitian: np.linalg.pinv(x, rcond=rcond,
                                                               hermitian=hermitian),
            _pinv_infer, vjp=_pinv_vjp)


def pinv(x, rcond=1e-15, hermitian=False, name=None):
    """The Moore-Penrose pseudo-inverse of the matrices of `x` ([..., M, N] ->
    [..., N, M]): singular values at most `rcond` times the largest are
    treated as zero. `hermitian`: x is read as symmetric (an
    eigendecomposition). The gradient holds the rank fixed."""
    x = _float_input(x)
    return bind("pinv", x, rcond=float(rcond), hermitian=bool(hermitian))


# ---- lu ------------------------------------------------------------------------------------
def _lu_kernel(x):
    """LAPACK getrf's partial pivoting, matrix by matrix: (packed L\\U, 1-based
    int32 pivots, int32 infos: the 1-based index of the first zero pivot, or 0)."""
    *batch, m, n = x.shape
    k = min(m, n)
    a = np.array(x, copy=True).reshape(-1, m, n)
    piv = np.zeros((a.shape[0], k), np.int32)
    info = np.zeros(a.shape[0], np.int32)
    for b in range(a.shape[0]):
        mat = a[b]
        for j in range(k):
            p = j + int(np.argmax(np.abs(mat[j:, j])))
            piv[b, j] = p + 1
            if mat[p, j] == 0:
                if not info[b]:
                    info[b] = j + 1
                continue
            if p != j:
                mat[[j, p]] = mat[[p, j]]
            mat[j + 1:, j] /= mat[j, j]
            mat[j + 1:, j + 1:] -= np.outer(mat[j + 1:, j], mat[j, j + 1:])
    return (a.reshape(x.shape), piv.reshape(tuple(batch) + (k,)),
            info.reshape(tuple(batch)))


def _lu_infer(x):
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"lu: x must be at least 2-D, got {list(shape)}")
    m, n = shape[-2:]
    k = None if m is None or n is None else min(m, n)
    i32 = np.dtype(np.int32)
    return (Aval(shape, _float_of(x.dtype)), Aval(shape[:-2] + (k,), i32),
            Aval(shape[:-2], i32))


def _lu_vjp(g, out, x):
    raise NotImplementedError("lu: gradients through the LU factorization are not supported; "
                              "differentiate solve / det / inverse instead")


register_op("lu", _lu_kernel, _lu_infer, vjp=_lu_vjp, num_outputs=3)


def lu(x, pivot=True, get_infos=False, name=None):
    """Paddle's lu: the LU factorization with partial pivoting of the matrices
    of `x` ([..., M, N]) -> (LU packed in one tensor: L's unit diagonal
    implied, 1-based int32 pivots [..., min(M, N)]) and with `get_infos`
    the int32 infos (0, or the 1-based index of the first zero pivot).
    Use `lu_unpack` for P, L, U."""
    if not pivot:
        raise NotImplementedError("lu: pivot=False is not supported (as on Paddle's CPU); "
                                  "use pivot=True")
    x = _float_input(x)
    packed, pivots, infos = bind("lu", x)
    return (packed, pivots, infos) if get_infos else (packed, pivots)


def lu_unpack(x, y, unpack_ludata=True, unpack_pivots=True, name=None):
    """(P, L, U) from `lu`'s packed factors `x` and pivots `y`, with
    x_original = P @ L @ U (None for a part not asked for)."""
    from .creation import arange, ones_like
    from .elementwise import cast, equal, where
    from .manipulation import unsqueeze
    from .search import take_along_axis
    from .shaping import tril, triu
    x, y = lift(x), lift(y)
    m, n = x.shape[-2:]
    k = y.shape[-1]
    if None in (m, n, k):
        raise ValueError(f"lu_unpack: the matrix dims must be known, got {list(x.shape)}")
    lower = upper = perm_matrix = None
    if unpack_ludata:
        low = tril(x, -1)[..., :, :k]
        eye = constant_eye(m, k, x.dtype)
        lower = low + eye
        upper = triu(x)[..., :k, :]
    if unpack_pivots:
        piv = cast(y, "int64") - 1
        idx = arange(m)
        perm = cast(ones_like(piv[..., :1]), "int64") * idx          # [..., m]
        for j in range(k):
            p = piv[..., j:j + 1]
            at_p = take_along_axis(perm, p, -1)
            at_j = perm[..., j:j + 1]
            perm = where(equal(idx, j), at_p, where(equal(idx, p), at_j, perm))
        # P[perm[i], i] = 1
        perm_matrix = cast(equal(unsqueeze(idx, -1), unsqueeze(perm, -2)), x.dtype)
    return perm_matrix, lower, upper


def constant_eye(m, k, dtype):
    from ._base import constant
    return constant(np.eye(m, k, dtype=np.dtype(dtype)))


# ---- eig (general square matrices: complex eigenvalues and vectors) ------------------------
def _eig_infer(x):
    shape = _square(x, "eig")
    dt = np.result_type(_float_of(x.dtype), np.complex64)
    return Aval(shape[:-1], dt), Aval(shape, dt)


def _eig_kernel(x):
    w, v = np.linalg.eig(x)
    dt = np.result_type(x.dtype, np.complex64)
    return w.astype(dt), v.astype(dt)


def _eig_vjp(g, out, x):
    raise NotImplementedError("eig: gradients are not supported (for a symmetric matrix use "
                              "eigh, whose gradient is)")


register_op("eig", _eig_kernel, _eig_infer, vjp=_eig_vjp, num_outputs=2)


def eig(x, name=None):
    """(eigenvalues, eigenvectors as columns) of general square matrices,
    always complex (complex64 from float32, complex128 from float64), in
    LAPACK's order; the vectors have unit norm."""
    x = _float_input(x)
    return bind("eig", x)


def eigvals(x, name=None):
    """The (complex) eigenvalues of general square matrices (see `eig`)."""
    return eig(x)[0]
