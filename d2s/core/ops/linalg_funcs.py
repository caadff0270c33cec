"""`d2s.linalg` functions composed from d2s ops (their gradients and backend
forms are those ops'): eigvalsh, matrix_power, multi_dot, vector_norm,
matrix_norm, triangular_solve, cholesky_solve, matrix_rank, lstsq, cond."""
from __future__ import annotations

import numpy as np

from ._base import lift
from .linalg import matmul
from .linalg_decomp import _eye_like, _float_input, _mT, eigh, solve, svd
from .linalg_more import inverse

__all__ = ["eigvalsh", "matrix_power", "multi_dot", "vector_norm", "matrix_norm",
           "triangular_solve", "cholesky_solve", "matrix_rank", "lstsq", "cond"]


def eigvalsh(x, UPLO="L", name=None):
    """The eigenvalues (ascending) of each symmetric matrix of `x`."""
    return eigh(x, UPLO)[0]


def matrix_power(x, n, name=None):
    """x @ x @ ... (n times) for square matrices (n an int: 0 gives the
    identity, a negative n powers the inverse), by repeated squaring."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"matrix_power: n must be an int, got {n!r}")
    x = lift(x)
    if len(x.shape) < 2 or (None not in x.shape[-2:] and x.shape[-1] != x.shape[-2]):
        raise ValueError(f"matrix_power: x must be [..., M, M], got {list(x.shape)}")
    n = int(n)
    if n == 0:
        return _eye_like(x) + x * 0
    if n < 0:
        x, n = inverse(x), -n
    out, base = None, x
    while n:
        if n & 1:
            out = base if out is None else matmul(out, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return out


def multi_dot(x, name=None):
    """The product of a list of matrices (the first may be a row vector and
    the last a column vector, 1-D), left to right."""
    xs = [lift(t) for t in x]
    if len(xs) < 2:
        raise ValueError(f"multi_dot: needs at least 2 tensors, got {len(xs)}")
    for i, t in enumerate(xs):
        ok = len(t.shape) == 2 or len(t.shape) == 1 and i in (0, len(xs) - 1)
        if not ok:
            raise ValueError(f"multi_dot: tensor {i} must be 2-D (only the first and last "
                             f"may be 1-D), got {list(t.shape)}")
    out = xs[0]
    for t in xs[1:]:
        out = matmul(out, t)
    return out


def _axes_tuple(x, axis):
    n = len(x.shape)
    if axis is None:
        return tuple(range(n))
    if isinstance(axis, int):
        axis = [axis]
    return tuple(int(a) % n if n else 0 for a in axis)


def vector_norm(x, p=2.0, axis=None, keepdim=False, name=None):
    """The p-norm of `x` over `axis` (all elements by default), read as a
    vector: (sum |x|^p)^(1/p); p=inf / -inf: max / min |x|; p=0: the count
    of nonzero entries."""
    from .elementwise import abs as _abs, cast, not_equal, sqrt
    from .reduction import max as _max, min as _min, sum as _sum
    x = _float_input(x)
    axes = list(_axes_tuple(x, axis))
    p = float(p)
    if p == np.inf:
        return _max(_abs(x), axes, keepdim)
    if p == -np.inf:
        return _min(_abs(x), axes, keepdim)
    if p == 0:
        return _sum(cast(not_equal(x, 0), x.dtype), axes, keepdim)
    if p == 2:
        return sqrt(_sum(x * x, axes, keepdim))
    if p == 1:
        return _sum(_abs(x), axes, keepdim)
    return _sum(_abs(x) ** p, axes, keepdim) ** (1.0 / p)


def matrix_norm(x, p="fro", axis=(-2, -1), keepdim=False, name=None):
    """The matrix norm of `x` over the two dims `axis`: "fro" (Frobenius),
    "nuc" (sum of singular values), 1 / -1 (max / min column abs sum), inf /
    -inf (max / min row abs sum), 2 / -2 (largest / smallest singular value)."""
    from .elementwise import abs as _abs, sqrt
    from .manipulation import transpose, unsqueeze
    from .reduction import max as _max, min as _min, sum as _sum
    x = _float_input(x)
    n = len(x.shape)
    if n < 2 or len(axis) != 2:
        raise ValueError(f"matrix_norm: needs x of 2 or more dims and 2 axes, got "
                         f"{list(x.shape)} and axis={axis}")
    r, c = (int(a) % n for a in axis)
    if r == c:
        raise ValueError(f"matrix_norm: the two axes must differ, got {axis}")
    if p == "fro":
        return sqrt(_sum(x * x, [r, c], keepdim))
    if p in (1, -1, np.inf, -np.inf):
        inner, outer = (r, c) if p in (1, -1) else (c, r)
        sums = _sum(_abs(x), inner, keepdim=True)
        out = (_max if p > 0 else _min)(sums, outer, keepdim=True)
        if not keepdim:
            from .manipulation import squeeze
            out = squeeze(out, sorted([r, c]))
        return out
    if p not in ("nuc", 2, -2):
        raise ValueError(f"matrix_norm: p must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, "
                         f"got {p!r}")
    rest = [i for i in range(n) if i not in (r, c)]
    s = svd(transpose(x, rest + [r, c]))[1]                       # [..., k]
    out = _sum(s, -1) if p == "nuc" else (_max if p == 2 else _min)(s, -1)
    if keepdim:
        for a in sorted([r, c]):
            out = unsqueeze(out, a)
    return out


def triangular_solve(x, y, upper=True, transpose=False, unitriangular=False, name=None):
    """Z with A @ Z = y, A the upper (or lower) triangle of `x` (transposed
    with `transpose`; its diagonal read as ones with `unitriangular`)."""
    from .shaping import tril, triu
    x = _float_input(x)
    a = triu(x) if upper else tril(x)
    if unitriangular:
        eye = _eye_like(a)
        a = a - a * eye + eye
    if transpose:
        a = _mT(a)
    return solve(a, y)


def cholesky_solve(x, y, upper=False, name=None):
    """Z with A @ Z = x, where `y` is A's Cholesky factor (lower L with A =
    L L^T, or upper U with A = U^T U)."""
    from .shaping import tril, triu
    y = _float_input(y)
    low = _mT(triu(y)) if upper else tril(y)
    return solve(_mT(low), solve(low, x))


def matrix_rank(x, tol=None, hermitian=False, name=None):
    """The number of singular values of each matrix of `x` above `tol`
    (default: the largest singular value * max(M, N) * the dtype's eps), as
    int64. `hermitian`: the eigenvalues' absolute values are used instead."""
    from .elementwise import abs as _abs, cast, greater_than
    from .manipulation import unsqueeze
    from .reduction import max as _max, sum as _sum
    x = _float_input(x)
    s = _abs(eigvalsh(x)) if hermitian else svd(x)[1]
    if tol is None:
        m, n = x.shape[-2:]
        if m is None or n is None:
            from .search import _dim
            from .elementwise import maximum
            big = cast(maximum(_dim(x, -2 % len(x.shape)), _dim(x, -1 % len(x.shape))),
                       x.dtype)
        else:
            big = float(max(m, n))
        tol = unsqueeze(_max(s, -1) * big * float(np.finfo(np.dtype(x.dtype)).eps), -1)
    return _sum(cast(greater_than(s, tol), "int64"), -1)


def lstsq(x, y, rcond=None, driver=None, name=None):
    """Least squares: the Z minimizing ||x @ Z - y|| per matrix (x [..., M,
    N], y [..., M, K]) -> (solution [..., N, K], residuals, rank,
    singular_values), Paddle's outputs. The solution is the minimum-norm
    one (pinv(x, rcond) @ y, as the gelsd/gelss drivers give; for a
    full-rank x every driver's). residuals: the squared residual norms
    [..., K] when M > N, else empty; rank: int32 (empty for "gels");
    singular_values: for "gelsd"/"gelss", else empty. rcond: singular
    values below rcond * the largest count as zero (default eps * max(M, N))."""
    from .creation import zeros
    from .elementwise import cast
    from .linalg_decomp import pinv
    from .reduction import sum as _sum
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise ValueError(f"lstsq: driver must be None, 'gels', 'gelsy', 'gelsd' or 'gelss', "
                         f"got {driver!r}")
    x, y = _float_input(x), _float_input(y)
    if len(x.shape) < 2 or len(y.shape) < 2:
        raise ValueError(f"lstsq: x and y must be [..., M, N] and [..., M, K], got "
                         f"{list(x.shape)} and {list(y.shape)}")
    m, n = x.shape[-2:]
    if rcond is None:
        if m is None or n is None:
            raise ValueError("lstsq: pass rcond when x's matrix dims are unknown (the default "
                             "is eps * max(M, N))")
        rcond = float(np.finfo(np.dtype(x.dtype)).eps) * max(m, n)
    solution = matmul(pinv(x, rcond), y)
    empty = zeros([0], x.dtype)
    if m is not None and n is not None and m > n:
        r = matmul(x, solution) - y
        residuals = _sum(r * r, -2)
    else:
        residuals = empty
    rank = empty if driver == "gels" else cast(matrix_rank(x, tol=None), "int32")
    singular = svd(x)[1] if driver in ("gelsd", "gelss") else empty
    return solution, residuals, rank, singular


def cond(x, p=None, name=None):
    """The condition number of the matrices of `x` in the norm `p`: None / 2
    (largest over smallest singular value), -2 (its inverse), or "fro",
    "nuc", 1, -1, inf, -inf (norm(x) * norm(inverse(x)), square x only)."""
    from .reduction import max as _max, min as _min
    x = _float_input(x)
    if p is None or p in (2, -2):
        s = svd(x)[1]
        big, small = _max(s, -1), _min(s, -1)
        return big / small if p in (None, 2) else small / big
    if p not in ("fro", "nuc", 1, -1, np.inf, -np.inf):
        raise ValueError(f"cond: p must be None, 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got "
                         f"{p!r}")
    return matrix_norm(x, p) * matrix_norm(inverse(x), p)
