"""Matrix decompositions and solves behind `d2s.linalg`: det, slogdet,
solve, cholesky, qr, svd, eigh. Each is a primitive (LAPACK through numpy,
jnp.linalg on xla) with the standard matrix-calculus gradient, written
with d2s ops so that it also builds in a static program:

* det: d det / dA = det * A^-T; slogdet: d log|det| / dA = A^-T;
* solve (A Z = B): dB = A^-T G, dA = -dB Z^T;
* cholesky (A = L L^T): dA = sym(L^-T Phi(L^T G) L^-1), Phi the lower
  triangle with its diagonal halved (the input read as symmetric);
* qr (reduced, or complete with rows <= cols): the triangular-solve form
  of the QR rule, wide inputs through their leading square block;
* eigh (distinct eigenvalues): dA = V (diag(gw) + F o (V^T gV)) V^T with
  F_ij = 1 / (w_j - w_i), symmetrized;
* pinv (P = A^+, its rank held fixed): dA = -P^T G P^T + (I - A P) G^T P P^T
  + P^T P G^T (I - P A);
* eig (real general matrices, complex results): dA = Re(V^-H (diag(gw) +
  P / conj(E)) V^H) with P the normalized V^H gV (PyTorch's rule);
* lu (A = P L U, packed): gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T))
  U^-T, tall and wide inputs through their leading square block;
* svd (real): through S, dA = U diag(gS) V^T; through U and V^T the
  standard rule with F_ij = 1 / (s_j^2 - s_i^2) (unbounded where singular
  values repeat; only losses invariant to each (u_i, v_i) sign flip have
  one).
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


def _qr_tall_rule(g_q, g_r, q, r):
    """gA of A = Q R with R square (rows >= cols): the triangular-solve form."""
    from .shaping import tril
    qdq = matmul(_mT(q), g_q)
    rdr = matmul(r, _mT(g_r))
    low = tril(qdq - _mT(qdq) + rdr - _mT(rdr))
    r_inv_t = _mT(inverse(r))
    return matmul(q, g_r + matmul(low, r_inv_t)) + matmul(g_q - matmul(q, qdq), r_inv_t)


def _qr_vjp(g, out, x, mode):
    """Tall or square: `_qr_tall_rule`. Wide (M < N): A = [X | Y] with
    X = Q R1 square and Y = Q R2, so gY = Q gR2 and X takes the square rule
    with gQ + Y gR2^T (Q also reaches the loss through R2 = Q^T Y)."""
    from .manipulation import concat
    g_q, g_r = g
    q, r = out
    m, n = x.shape[-2:]
    if mode == "complete" and (m is None or n is None or m > n):
        raise NotImplementedError(
            "qr: the gradient of mode='complete' with rows > cols is not defined (Q's extra "
            "columns are any basis of the complement); use mode='reduced'")
    if g_q is None:
        g_q = q * 0.0
    if g_r is None:
        g_r = r * 0.0
    if m is None or n is None or m >= n:
        return (cast_like(_qr_tall_rule(g_q, g_r, q, r), x),)
    y = x[..., :, m:]
    g_x = _qr_tall_rule(g_q + matmul(y, _mT(g_r[..., :, m:])), g_r[..., :, :m], q,
                        r[..., :, :m])
    return (cast_like(concat([g_x, matmul(q, g_r[..., :, m:])], -1), x),)


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
    """The real SVD's rule (A = U S V^T, k = min(M, N) columns):
    gA = U [ (F o skew(U^T gU)) S + diag(gS) + S (F o skew(V^T gV)) ] V^T
         + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T),
    F_ij = 1 / (s_j^2 - s_i^2) off the diagonal, skew(X) = X - X^T. Only a
    loss that does not change when a pair (u_i, v_i) flips sign has a
    gradient through U or V; it is unbounded where singular values repeat,
    and the last two terms divide by them (as PyTorch's)."""
    from .manipulation import unsqueeze
    g_u, g_s, g_vh = g
    u, s, vh = out
    m, n = x.shape[-2:]
    if full_matrices and (g_u is not None or g_vh is not None) and (
            m is None or n is None or m != n):
        raise NotImplementedError(
            "svd: gradients through U or VH with full_matrices=True of a non-square matrix "
            "are not supported (the extra columns are any basis of the complement); use "
            "full_matrices=False")
    if full_matrices and (m is None or n is None):
        raise NotImplementedError("svd: the gradient with full_matrices=True needs known "
                                  "matrix dims")
    if full_matrices:
        k = min(m, n)
        u, vh = u[..., :k], vh[..., :k, :]
    core = None
    if g_s is not None:
        core = unsqueeze(g_s, -1) * _eye_like(matmul(_mT(u), u))
    if g_u is not None or g_vh is not None:
        s2 = s * s
        utu = matmul(_mT(u), u)
        eye = _eye_like(utu)
        diff = unsqueeze(s2, -2) - unsqueeze(s2, -1)          # [i, j]: s_j^2 - s_i^2
        f = (1.0 - eye) / (diff + eye)
        s_row, s_col = unsqueeze(s, -2), unsqueeze(s, -1)
        extra = None
    if g_u is not None:
        utg = matmul(_mT(u), g_u)
        term = f * (utg - _mT(utg)) * s_row
        core = term if core is None else core + term
        # the part of gU outside U's span
        extra = matmul(g_u - matmul(u, utg), vh / s_col)
    if g_vh is not None:
        v, g_v = _mT(vh), _mT(g_vh)
        vtg = matmul(vh, g_v)
        term = s_col * (f * (vtg - _mT(vtg)))
        core = term if core is None else core + term
        part = matmul(u / s_row, _mT(g_v - matmul(v, vtg)))
        extra = part if extra is None else extra + part
    ga = matmul(matmul(u, core), vh)
    if g_u is not None or g_vh is not None:
        ga = ga + extra
    return (cast_like(ga, x),)


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
    """A = P L U. Square: with X = L^-1 P^T dA U^-1, dL = L tril(X, -1) and
    dU = triu(X) U, so gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T.
    Tall (M > N): the rows below, A2 = L2 U, give gA2 = gL2 U^-T and add
    -L2^T gL2 U^-T to gU. Wide (M < N): the columns right, A2 = L U2, give
    gA2 = L^-T gU2 and add -L^-T gU2 U2^T to gL. (gL, gU: the parts of the
    packed factors' gradient below and on/above the diagonal.)"""
    from .manipulation import concat
    from .shaping import tril, triu
    g_lu = g[0]
    packed, pivots = out[0], out[1]
    m, n = x.shape[-2:]
    if m is None or n is None:
        raise NotImplementedError("lu: the gradient needs the matrix dims known when the "
                                  "program is built")
    if g_lu is None:
        return (x * 0.0,)
    k = min(m, n)
    p, low, up = lu_unpack(packed, pivots)
    l1, u1 = low[..., :k, :], up[..., :, :k]
    g_l, g_u = tril(g_lu, -1)[..., :, :k], triu(g_lu)[..., :k, :]
    g_l1, g_u1 = g_l[..., :k, :], g_u[..., :, :k]
    l_inv_t, u_inv_t = _mT(inverse(l1)), _mT(inverse(u1))
    below = right = None
    if m > n:
        l2, g_l2 = low[..., k:, :], g_l[..., k:, :]
        below = matmul(g_l2, u_inv_t)
        g_u1 = g_u1 - matmul(matmul(_mT(l2), g_l2), u_inv_t)
    elif n > m:
        u2, g_u2 = up[..., :, k:], g_u[..., :, k:]
        right = matmul(l_inv_t, g_u2)
        g_l1 = g_l1 - matmul(right, _mT(u2))
    inner = tril(matmul(_mT(l1), g_l1), -1) + triu(matmul(g_u1, _mT(u1)))
    g_a = matmul(matmul(l_inv_t, inner), u_inv_t)
    if below is not None:
        g_a = concat([g_a, below], -2)
    if right is not None:
        g_a = concat([g_a, right], -1)
    return (cast_like(matmul(p, g_a), x),)


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
    """A = V diag(w) V^-1 (real A, complex w and V, unit-norm columns):
    gA = Re( V^-H (diag(gw) + P / conj(E)) V^H ), P = V^H gV minus
    V^H V diag(Re diag(V^H gV)) (the columns' norm held at 1), E_ij =
    w_j - w_i off the diagonal, 1 on it (PyTorch's rule). Only losses that
    do not change with each column's phase have one; it is unbounded where
    eigenvalues repeat."""
    from .fft_ops import conj, real
    from .manipulation import unsqueeze
    from .compositions import diagonal
    g_w, g_v = g
    w, v = out
    vh = conj(_mT(v))
    eye = _eye_like(real(v))
    inner = None
    if g_v is not None:
        vhgv = matmul(vh, g_v)
        keep = real(diagonal(vhgv, 0, -2, -1))
        vhgv = vhgv - matmul(vh, v * unsqueeze(keep, -2))
        e = unsqueeze(w, -2) - unsqueeze(w, -1)               # [i, j]: w_j - w_i
        e = e * (1.0 - eye) + eye
        inner = vhgv / conj(e)
    if g_w is not None:
        term = unsqueeze(g_w, -1) * eye
        inner = term if inner is None else inner + term
    ga = bind("solve", vh, matmul(inner, vh))
    return (cast_like(real(ga), x),)


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
