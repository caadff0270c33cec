"""Products, diagonals and shape helpers that ported model code calls beyond
the core list (issue 25): diag, diag_embed, diagflat, kron, tensordot,
inner, outer, cross, cdist, dist, renorm, moveaxis, unflatten, view,
view_as, broadcast_tensors, tensor_split, hsplit, vsplit, dsplit, rot90,
tril_indices, triu_indices, block_diag, cartesian_prod, combinations, cov,
corrcoef.

All are compositions of existing ops (reshape, multiply, where, einsum,
getitem, concat, ...): their gradients, static shape rules and xla / ONNX
forms are those ops', so nothing here needs a rule of its own. Where a
result's layout depends on a dim (a split point, a diagonal's length), that
dim must be known while building and the error says so.
"""
from __future__ import annotations

import builtins
import itertools

import numpy as np

from ..shapes import broadcast_shapes, normalize_axis
from ._base import constant, is_value, lift
from .creation import arange, zeros
from .elementwise import (abs as _abs, cast, equal, greater_than, multiply, not_equal,
                          pow as _pow, sqrt, where, zeros_like_)
from .indexing import getitem
from .manipulation import concat, expand, reshape, stack, transpose, unsqueeze
from .reduction import max as _max, min as _min, sum as _sum
from .shaping import _dim, _int, _take, flip, meshgrid

__all__ = ["diag", "diag_embed", "diagflat", "kron", "tensordot", "inner", "outer", "cross",
           "cdist", "dist", "renorm", "moveaxis", "unflatten", "view", "view_as",
           "broadcast_tensors", "tensor_split", "hsplit", "vsplit", "dsplit", "rot90",
           "tril_indices", "triu_indices", "block_diag", "cartesian_prod", "combinations",
           "cov", "corrcoef"]


# ---- diagonals --------------------------------------------------------------------------
def _offsets(m, n):
    """j - i over an (m, n) grid: a numpy constant for known dims, computed
    from the run-time dims otherwise."""
    if isinstance(m, int) and isinstance(n, int):
        return np.arange(n)[None, :] - np.arange(m)[:, None]
    return unsqueeze(arange(n), 0) - unsqueeze(arange(m), 1)


def _on_diagonal(m, n, offset):
    offs = _offsets(m, n)
    return offs == offset if isinstance(offs, np.ndarray) else equal(offs, offset)


def _embed_last(x, offset, padding_value=0):
    """(..., n) -> (..., n + |offset|, n + |offset|) with x on the `offset`
    diagonal of the last two dims and `padding_value` elsewhere."""
    k = abs(offset)
    n = _dim(x, -1)
    if k:
        if None not in x.shape[:-1]:
            pad = zeros(list(x.shape[:-1]) + [k], x.dtype)
        else:  # leading dims known only at run time: zeros shaped from x itself
            pad = concat([zeros_like_(_take(x, len(x.shape) - 1, 0, 1))] * k, axis=-1)
        x = concat([x, pad], axis=-1)
    m = n + k
    # row i holds x[i] (offset >= 0: row i's entry is at column i + offset) or
    # column j holds x[j] (offset < 0)
    vals = unsqueeze(x, -1) if offset >= 0 else unsqueeze(x, -2)
    mask = _on_diagonal(m, m, offset)
    fill = constant(padding_value, x.dtype)
    return where(mask, vals, fill)


def diag(x, offset=0, padding_value=0, name=None):
    """A 1-D `x`: the square matrix with `x` on its `offset`-th diagonal and
    `padding_value` elsewhere. A 2-D `x`: its `offset`-th diagonal (1-D)."""
    x = lift(x)
    offset = _int(offset, "diag", "offset")
    if len(x.shape) == 1:
        return _embed_last(x, offset, padding_value)
    if len(x.shape) != 2:
        raise ValueError(f"diag: x must be 1-D or 2-D, got shape {tuple(x.shape)}")
    m, n = _dim(x, 0), _dim(x, 1)
    picked = where(_on_diagonal(m, n, offset), x, zeros_like_(x))
    if offset >= 0:  # column j holds x[j - offset, j]: columns offset.., at most m of them
        line, start, limit = _sum(picked, axis=0), offset, m
    else:  # row i holds x[i, i + offset]: rows -offset.., at most n of them
        line, start, limit = _sum(picked, axis=1), -offset, n
    return getitem(_take(line, 0, start, None), builtins.slice(None, limit))


def diag_embed(input, offset=0, dim1=-2, dim2=-1, name=None):
    """The last dim of `input` placed on the `offset`-th diagonal of new
    matrices whose rows and columns are the result's dims `dim1`, `dim2`."""
    x = lift(input)
    offset = _int(offset, "diag_embed", "offset")
    if not x.shape:
        raise ValueError("diag_embed: input must have at least 1 dim")
    nd = len(x.shape) + 1
    d1, d2 = normalize_axis(dim1, nd, "diag_embed"), normalize_axis(dim2, nd, "diag_embed")
    if d1 == d2:
        raise ValueError(f"diag_embed: dim1 and dim2 must differ, got {dim1} and {dim2}")
    out = _embed_last(x, offset)
    if (d1, d2) == (nd - 2, nd - 1):
        return out
    batch = list(range(nd - 2))
    perm = [None] * nd
    perm[d1], perm[d2] = nd - 2, nd - 1
    rest = iter(batch)
    perm = [p if p is not None else next(rest) for p in perm]
    return transpose(out, perm)


def diagflat(x, offset=0, name=None):
    """`x` flattened, on the `offset`-th diagonal of a square matrix."""
    x = lift(x)
    return diag(reshape(x, [-1]), offset)


# ---- products ---------------------------------------------------------------------------
def kron(x, y, name=None):
    """The Kronecker product: each entry of `x` times the whole of `y`
    (the shorter shape gains leading 1s)."""
    x, y = lift(x), lift(y)
    nd = builtins.max(len(x.shape), len(y.shape))
    # dims unknown while building are read at run time (0-d int values)
    xs = [1] * (nd - len(x.shape)) + [_dim(x, i) for i in range(len(x.shape))]
    ys = [1] * (nd - len(y.shape)) + [_dim(y, i) for i in range(len(y.shape))]
    xr = reshape(x, [d for a in xs for d in (a, 1)])
    yr = reshape(y, [d for b in ys for d in (1, b)])
    prod = multiply(xr, yr)
    out = [a * b for a, b in zip(xs, ys)]
    return reshape(prod, out)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _tensordot_axes(axes, nx, ny):
    if is_value(axes):
        axes = np.asarray(axes.numpy() if hasattr(axes, "numpy") else axes).tolist()
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > builtins.min(nx, ny):
            raise ValueError(f"tensordot: axes={n} must be in [0, {builtins.min(nx, ny)}]")
        return list(range(nx - n, nx)), list(range(n))
    axes = list(axes)
    if axes and all(isinstance(a, (int, np.integer)) for a in axes):
        return [int(a) for a in axes], [int(a) for a in axes]
    if len(axes) == 1:
        axes = [axes[0], axes[0]]
    if len(axes) != 2:
        raise ValueError(f"tensordot: axes must be an int, a list of axes, or a pair of lists, "
                         f"got {axes!r}")
    ax, ay = ([a] if isinstance(a, (int, np.integer)) else list(a) for a in axes)
    return [int(a) for a in ax], [int(a) for a in ay]


def tensordot(x, y, axes=2, name=None):
    """Sum of products over `axes` of x and y (an int n: the last n of x with
    the first n of y; a pair of lists: those axes of each), as one einsum."""
    from .linalg_more import einsum
    x, y = lift(x), lift(y)
    nx, ny = len(x.shape), len(y.shape)
    ax, ay = _tensordot_axes(axes, nx, ny)
    if len(ax) != len(ay):
        raise ValueError(f"tensordot: {len(ax)} axes of x but {len(ay)} of y")
    ax = [normalize_axis(a, nx, "tensordot") for a in ax]
    ay = [normalize_axis(a, ny, "tensordot") for a in ay]
    if nx + ny - len(ax) > len(_LETTERS):
        raise ValueError("tensordot: too many dims")
    sx = list(_LETTERS[:nx])
    free = iter(_LETTERS[nx:])
    sy = [None] * ny
    for a, b in zip(ax, ay):
        sy[b] = sx[a]
    sy = [s if s is not None else next(free) for s in sy]
    out = [s for i, s in enumerate(sx) if i not in ax] + [s for i, s in enumerate(sy)
                                                          if i not in ay]
    x, y = _common(x, y)
    return einsum(f"{''.join(sx)},{''.join(sy)}->{''.join(out)}", x, y)


def _common(*xs):
    dtype = np.result_type(*(np.dtype(v.dtype) for v in xs))
    return [v if np.dtype(v.dtype) == dtype else cast(v, dtype) for v in xs]


def inner(x, y, name=None):
    """Sum of products over the last dims of x and y (a 0-d operand scales)."""
    x, y = lift(x), lift(y)
    if not x.shape or not y.shape:
        return multiply(x, y)
    return tensordot(x, y, [[-1], [-1]])


def outer(x, y, name=None):
    """x (flattened) as a column times y (flattened) as a row."""
    x, y = lift(x), lift(y)
    return multiply(reshape(x, [-1, 1]), reshape(y, [1, -1]))


def cross(x, y, axis=9, name=None):
    """The 3-vector cross product along `axis` (Paddle's default 9: the first
    axis of size 3)."""
    x, y = lift(x), lift(y)
    shape = broadcast_shapes(tuple(x.shape), tuple(y.shape), opname="cross")
    if tuple(x.shape) != shape or tuple(y.shape) != shape:
        if None in shape:
            raise ValueError("cross: x and y must have the same shape when dims are unknown")
        x, y = expand(x, list(shape)), expand(y, list(shape))
    if axis == 9:
        found = [i for i, d in enumerate(shape) if d == 3]
        if not found:
            raise ValueError(f"cross: no axis of size 3 in {shape}; pass axis")
        axis = found[0]
    axis = normalize_axis(_int(axis, "cross", "axis"), len(shape), "cross")
    if shape[axis] != 3:
        raise ValueError(f"cross: axis {axis} of {shape} must have size 3")
    x1, x2, x3 = (_take(x, axis, i, i + 1) for i in range(3))
    y1, y2, y3 = (_take(y, axis, i, i + 1) for i in range(3))
    return concat([x2 * y3 - x3 * y2, x3 * y1 - x1 * y3, x1 * y2 - x2 * y1], axis=axis)


def _pnorm(d, p, axis, keepdim=False):
    """The p-norm of `d` over `axis`: p = 0 counts the nonzeros, inf / -inf
    take the largest / smallest |d|, p = 2 has gradient 0 at 0 (as torch)."""
    from .reduction import norm
    p = float(p)
    if p == 2.0:
        return norm(d, 2, axis, keepdim)
    a = _abs(d)
    if p == 0.0:
        return _sum(cast(not_equal(d, 0), d.dtype), axis, keepdim)
    if p == float("inf"):
        return _max(a, axis, keepdim)
    if p == float("-inf"):
        return _min(a, axis, keepdim)
    if p == 1.0:
        return _sum(a, axis, keepdim)
    if p < 0:
        raise ValueError(f"p must be >= 0 (or -inf), got {p}")
    s = _sum(_pow(a, p), axis, keepdim)
    nonzero = greater_than(s, 0)
    safe = where(nonzero, s, constant(1.0, s.dtype))
    return where(nonzero, _pow(safe, 1.0 / p), zeros_like_(s))


def cdist(x, y, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary", name=None):
    """Pairwise p-norm distances between the rows of x (..., P, M) and
    y (..., R, M): shape (..., P, R)."""
    x, y = lift(x), lift(y)
    if len(x.shape) < 2 or len(y.shape) < 2:
        raise ValueError(f"cdist: x and y must have at least 2 dims, got {tuple(x.shape)} "
                         f"and {tuple(y.shape)}")
    x, y = _common(x, y)
    d = unsqueeze(x, -2) - unsqueeze(y, -3)
    return _pnorm(d, p, -1)


def dist(x, y, p=2, name=None):
    """The p-norm of x - y (broadcast), over all elements: a 0-d tensor."""
    x, y = lift(x), lift(y)
    x, y = _common(x, y)
    return _pnorm(reshape(x - y, [-1]), p, 0)


def renorm(x, p, axis, max_norm, name=None):
    """Each slice of `x` along `axis` whose p-norm exceeds `max_norm` scaled
    down to norm `max_norm` (others unchanged)."""
    x = lift(x)
    nd = len(x.shape)
    axis = normalize_axis(_int(axis, "renorm", "axis"), builtins.max(nd, 1), "renorm")
    others = [i for i in range(nd) if i != axis]
    norms = _pnorm(x, p, others, keepdim=True)
    scale = where(greater_than(norms, max_norm),
                  constant(float(max_norm), x.dtype) / (norms + constant(1e-7, x.dtype)),
                  constant(1.0, x.dtype))
    return x * scale


# ---- shapes -----------------------------------------------------------------------------
def moveaxis(x, source, destination, name=None):
    """`x` with its `source` axes moved to positions `destination` (the other
    axes keep their order)."""
    x = lift(x)
    nd = len(x.shape)
    src = [source] if isinstance(source, (int, np.integer)) else list(source)
    dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: {len(src)} source axes but {len(dst)} destinations")
    src = [normalize_axis(int(a), nd, "moveaxis") for a in src]
    dst = [normalize_axis(int(a), nd, "moveaxis") for a in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"moveaxis: repeated axes in {source} / {destination}")
    rest = iter([i for i in range(nd) if i not in src])
    perm = [None] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    perm = [p if p is not None else next(rest) for p in perm]
    return x if perm == list(range(nd)) else transpose(x, perm)


def unflatten(x, axis, shape, name=None):
    """`x` with its dim `axis` split into `shape` (one entry may be -1)."""
    x = lift(x)
    nd = len(x.shape)
    axis = normalize_axis(_int(axis, "unflatten", "axis"), nd, "unflatten")
    if is_value(shape):
        shape = np.asarray(shape.numpy()).tolist()
    shape = [_int(s, "unflatten", "a size") for s in shape]
    if not shape:
        raise ValueError("unflatten: shape must not be empty")
    n = x.shape[axis]
    if n is not None and -1 not in shape and int(np.prod(shape)) != n:
        raise ValueError(f"unflatten: shape {shape} does not hold the {n} entries of axis {axis}")
    before = [0] * axis  # (reshape's 0: copy that dim)
    after = [0 if d is not None else -1 for d in x.shape[axis + 1:]]
    if -1 in shape and -1 in after:
        raise ValueError("unflatten: -1 in shape needs the trailing dims known while building")
    if any(d is None for d in x.shape[axis + 1:]) and after.count(-1) > 1:
        raise ValueError("unflatten: at most one trailing dim may be unknown")
    return reshape(x, before + shape + [d if d != 0 else x.shape[axis + 1 + i]
                                        for i, d in enumerate(after)])


def view(x, shape_or_dtype, name=None):
    """`x` reshaped to a shape (a list); a dtype other than x's is a
    reinterpretation of its bytes, which d2s does not do (cast instead)."""
    x = lift(x)
    if isinstance(shape_or_dtype, (list, tuple)) or is_value(shape_or_dtype):
        return reshape(x, shape_or_dtype)
    from ..dtypes import as_dtype
    if as_dtype(shape_or_dtype) == np.dtype(x.dtype):
        return x
    raise TypeError(f"view: reinterpreting the bytes of a {x.dtype} tensor as "
                    f"{shape_or_dtype} is not supported; use x.astype(...) for a cast")


def view_as(x, other, name=None):
    """`x` reshaped to the shape of `other`."""
    x, other = lift(x), lift(other)
    shape = [d if d is not None else _dim(other, i) for i, d in enumerate(other.shape)]
    return reshape(x, shape)


def broadcast_tensors(input, name=None):
    """The tensors of `input` broadcast to their common shape (a list)."""
    xs = [lift(v) for v in input]
    shape = broadcast_shapes(*(tuple(v.shape) for v in xs), opname="broadcast_tensors")
    if None in shape:
        from .shaping import expand_as
        out = xs[0]
        for v in xs[1:]:
            out = out + zeros_like_(v)  # a value of the common shape
        return [expand_as(v, out) for v in xs]
    return [v if tuple(v.shape) == shape else expand(v, list(shape)) for v in xs]


def tensor_split(x, num_or_indices, axis=0, name=None):
    """Pieces of `x` along `axis`: `num_or_indices` an int n gives n pieces
    as equal as can be (the first ones one longer); a list gives the split
    points (numpy's array_split)."""
    x = lift(x)
    if not x.shape:
        raise ValueError("tensor_split: x must have at least 1 dim")
    axis = normalize_axis(_int(axis, "tensor_split", "axis"), len(x.shape), "tensor_split")
    n = x.shape[axis]
    if n is None:
        raise ValueError(f"tensor_split: the size of axis {axis} of {tuple(x.shape)} must be "
                         "known while building (it sets the pieces)")
    if isinstance(num_or_indices, (list, tuple)) or is_value(num_or_indices):
        if is_value(num_or_indices):
            num_or_indices = np.asarray(num_or_indices.numpy()).tolist()
        points = [_int(i, "tensor_split", "an index") for i in num_or_indices]
        bounds = [0] + [p + n if p < 0 else p for p in points] + [n]
        bounds = [builtins.min(builtins.max(b, 0), n) for b in bounds]
        return [_take(x, axis, a, builtins.max(a, b)) for a, b in zip(bounds, bounds[1:])]
    k = _int(num_or_indices, "tensor_split", "num_or_indices")
    if k <= 0:
        raise ValueError(f"tensor_split: the number of pieces must be positive, got {k}")
    size, extra = divmod(n, k)
    out, start = [], 0
    for i in range(k):
        stop = start + size + (1 if i < extra else 0)
        out.append(_take(x, axis, start, stop))
        start = stop
    return out


def _split_at(x, num_or_indices, axis, opname, min_nd):
    x = lift(x)
    if len(x.shape) < min_nd:
        raise ValueError(f"{opname}: x must have at least {min_nd} dims, got {tuple(x.shape)}")
    if isinstance(num_or_indices, (int, np.integer)):
        n = x.shape[axis]
        if n is not None and n % int(num_or_indices):
            raise ValueError(f"{opname}: axis {axis} (size {n}) does not divide into "
                             f"{num_or_indices} equal pieces")
    return tensor_split(x, num_or_indices, axis)


def hsplit(x, num_or_indices, name=None):
    """tensor_split along axis 1 (axis 0 of a 1-D x); an int must divide it."""
    x = lift(x)
    return _split_at(x, num_or_indices, 1 if len(x.shape) > 1 else 0, "hsplit", 1)


def vsplit(x, num_or_indices, name=None):
    """tensor_split along axis 0 of an x of at least 2 dims."""
    return _split_at(x, num_or_indices, 0, "vsplit", 2)


def dsplit(x, num_or_indices, name=None):
    """tensor_split along axis 2 of an x of at least 3 dims."""
    return _split_at(x, num_or_indices, 2, "dsplit", 3)


def rot90(x, k=1, axes=[0, 1], name=None):
    """`x` turned by 90 degrees `k` times in the plane `axes` (from the first
    axis toward the second)."""
    x = lift(x)
    nd = len(x.shape)
    if len(axes) != 2 or nd < 2:
        raise ValueError(f"rot90: axes must be 2 axes of an x with >= 2 dims, got {axes}")
    a, b = (normalize_axis(int(v), nd, "rot90") for v in axes)
    if a == b:
        raise ValueError(f"rot90: the axes must differ, got {axes}")
    k = _int(k, "rot90", "k") % 4
    if k == 0:
        return x
    if k == 2:
        return flip(x, [a, b])
    perm = list(range(nd))
    perm[a], perm[b] = perm[b], perm[a]
    if k == 1:
        return transpose(flip(x, [b]), perm)
    return flip(transpose(x, perm), [b])


def _indices(row, col, offset, dtype, lower, opname):
    from ..dtypes import as_dtype
    row = _int(row, opname, "row")
    col = row if col is None else _int(col, opname, "col")
    offset = _int(offset, opname, "offset")
    if row < 0 or col < 0:
        raise ValueError(f"{opname}: row and col must be >= 0, got {row}, {col}")
    picked = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return constant(np.stack(picked).astype(as_dtype(dtype)).reshape(2, -1))


def tril_indices(row, col, offset=0, dtype="int64"):
    """(2, N) coordinates of the lower triangle (on and below diagonal
    `offset`) of a row x col matrix, row by row: a constant."""
    return _indices(row, col, offset, dtype, True, "tril_indices")


def triu_indices(row, col=None, offset=0, dtype="int64"):
    """(2, N) coordinates of the upper triangle (on and above diagonal
    `offset`) of a row x col matrix (col defaults to row): a constant."""
    return _indices(row, col, offset, dtype, False, "triu_indices")


def block_diag(inputs, name=None):
    """The block-diagonal matrix of `inputs` (0-d, 1-D or 2-D each; a 1-D
    tensor is a row), zeros elsewhere."""
    xs = [lift(v) for v in inputs]
    if not xs:
        raise ValueError("block_diag: inputs must not be empty")
    xs = _common(*xs)
    mats = []
    for v in xs:
        if len(v.shape) > 2:
            raise ValueError(f"block_diag: inputs must have at most 2 dims, got {tuple(v.shape)}")
        if None in v.shape:
            raise ValueError("block_diag: the dims of the inputs must be known while building")
        mats.append(reshape(v, [1, -1]) if len(v.shape) < 2 else v)
    widths = [m.shape[1] for m in mats]
    total = builtins.sum(widths)
    rows, left = [], 0
    for m, w in zip(mats, widths):
        parts = []
        if left:
            parts.append(zeros([m.shape[0], left], m.dtype))
        parts.append(m)
        if total - left - w:
            parts.append(zeros([m.shape[0], total - left - w], m.dtype))
        rows.append(concat(parts, axis=1) if len(parts) > 1 else m)
        left += w
    return concat(rows, axis=0) if len(rows) > 1 else rows[0]


def cartesian_prod(x, name=None):
    """Every combination of one entry from each 1-D tensor of `x`: (N, len(x))
    rows in row-major order (one tensor: itself)."""
    xs = [lift(v) for v in x]
    if len(xs) == 1:
        return xs[0]
    xs = _common(*xs)
    grids = meshgrid(*xs)
    return stack([reshape(g, [-1]) for g in grids], axis=1)


def combinations(x, r=2, with_replacement=False, name=None):
    """The length-`r` combinations of the 1-D `x` (itertools' order), as an
    (N, r) tensor; the size of x must be known while building."""
    x = lift(x)
    if len(x.shape) != 1:
        raise ValueError(f"combinations: x must be 1-D, got {tuple(x.shape)}")
    r = _int(r, "combinations", "r")
    if r < 0:
        raise ValueError(f"combinations: r must be >= 0, got {r}")
    n = x.shape[0]
    if n is None:
        raise ValueError("combinations: the size of x must be known while building")
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = np.array(list(pick(range(n), r)), dtype=np.int64).reshape(-1, r)
    if idx.size == 0:
        return zeros([0] if r == 0 else [0, r], x.dtype)
    return getitem(x, constant(idx))


# ---- statistics -------------------------------------------------------------------------
def cov(x, rowvar=True, ddof=True, fweights=None, aweights=None, name=None):
    """The covariance matrix of the variables in the rows of `x` (columns
    with `rowvar=False`), normalized by N - 1 (`ddof`) or N, with optional
    integer frequency and float observation weights (numpy's `cov`)."""
    x = lift(x)
    if len(x.shape) > 2:
        raise ValueError(f"cov: x must have at most 2 dims, got {tuple(x.shape)}")
    if np.dtype(x.dtype).kind not in "fc":
        x = cast(x, "float32")
    if len(x.shape) < 2:
        x = reshape(x, [1, -1])
    if not rowvar:
        x = transpose(x, [1, 0])
    w = None
    if fweights is not None:
        w = cast(lift(fweights), x.dtype)
    if aweights is not None:
        a = cast(lift(aweights), x.dtype)
        w = a if w is None else w * a
    if w is None:
        n = _dim(x, 1)
        avg = _sum(x, axis=1, keepdim=True) / cast(n, x.dtype) if is_value(n) else \
            _sum(x, axis=1, keepdim=True) / float(n)
        xc = x - avg
        norm = (n - 1 if ddof else n) if isinstance(n, int) else cast(n - (1 if ddof else 0),
                                                                      x.dtype)
        c = _mat(xc, xc) / norm
    else:
        wsum = _sum(w)
        avg = _sum(x * w, axis=1, keepdim=True) / wsum
        if not ddof:
            fact = wsum
        elif aweights is None:
            fact = wsum - 1.0
        else:
            fact = wsum - _sum(w * cast(lift(aweights), x.dtype)) / wsum
        xc = x - avg
        c = _mat(xc * w, xc) / fact
    return reshape(c, []) if c.shape[0] == 1 else c


def _mat(a, b):
    from .linalg import matmul
    return matmul(a, transpose(b, [1, 0]))


def corrcoef(x, rowvar=True, name=None):
    """Pearson correlation coefficients of the rows of `x` (columns with
    `rowvar=False`), clipped to [-1, 1]."""
    from .elementwise import clip
    c = cov(x, rowvar)
    if not c.shape:
        return c / c
    d = diag(c)
    s = sqrt(d)
    c = c / unsqueeze(s, 1) / unsqueeze(s, 0)
    return clip(c, -1.0, 1.0)
