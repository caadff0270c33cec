"""Paddle's `fill_diagonal_` / `fill_diagonal_tensor` as functions of ops
(their in-place forms are made in d2s.tensor_methods).

Both are a `where` over a mask of diagonal positions built from index
arithmetic on the tensor's shape, so they work with dims unknown until the
program runs (the batch of a similarity matrix, `sim.fill_diagonal_(-1e9)`
in a contrastive loss), differentiate (the filled positions get no gradient
from `x`, `y`'s get theirs) and lower to every backend with no op of their
own.
"""
from __future__ import annotations

import numpy as np

from ._base import lift

__all__ = ["fill_diagonal", "fill_diagonal_tensor"]


def _ops():
    from .. import ops
    return ops


def _dims(x):
    """Each dim of `x`: an int when known, else a 0-d int64 tensor."""
    o = _ops()
    if None not in x.shape:
        return list(x.shape)
    shape = o.shape(x)
    return [d if d is not None else o.cast(o.slice(shape, [0], [i], [i + 1]), "int64")
            .reshape([]) for i, d in enumerate(x.shape)]


def fill_diagonal(x, value, offset=0, wrap=False, name=None):
    """`x` with `value` on its main diagonal (shifted right by `offset`,
    left when negative), as Paddle's `Tensor.fill_diagonal_` (and
    PyTorch's) fills it: walking the flattened tensor in steps of one
    more than a row (the sum of the strides, for more than 2 dims, where
    every dim must be equal), over the first `cols` rows of a tall matrix
    or, with `wrap`, down all of it (a row skipped between blocks)."""
    o = _ops()
    x = lift(x)
    nd = len(x.shape)
    if nd < 2:
        raise ValueError(f"fill_diagonal_: x must have at least 2 dims, got shape "
                         f"{list(x.shape)}")
    dims = _dims(x)
    known = [d for d in dims if isinstance(d, int)]
    if nd > 2 and len(set(known)) > 1:
        raise ValueError(f"fill_diagonal_: a tensor of more than 2 dims must have all dims "
                         f"equal, got shape {list(x.shape)}")
    cols = dims[-1] if nd == 2 else (known[0] if known else dims[0])
    numel = 1
    for d in dims:
        numel = numel * d
    stride = cols + 1 if nd == 2 else sum(cols ** k for k in range(nd))
    size = numel if wrap or nd > 2 else _smaller(numel, cols * cols)
    target = ([-1 if d is None else d for d in x.shape] if list(x.shape).count(None) <= 1
              else o.shape(x))
    flat = o.reshape(o.arange(0, numel, dtype="int64"), target)
    j = o.subtract(flat, o.full([], offset, "int64"))
    column = o.add(o.remainder(j, _int64(cols)), o.full([], offset, "int64"))
    mask = o.logical_and(
        o.logical_and(o.greater_equal(j, o.full([], 0, "int64")), o.less_than(j, _int64(size))),
        o.logical_and(o.equal(o.remainder(j, _int64(stride)), o.full([], 0, "int64")),
                      o.logical_and(o.greater_equal(column, o.full([], 0, "int64")),
                                    o.less_than(column, _int64(cols)))))
    return o.where(mask, o.full_like(x, value), x)


def fill_diagonal_tensor(x, y, offset=0, dim1=0, dim2=1, name=None):
    """`x` with `y` written on the diagonal of the 2-D slices spanned by
    `dim1` and `dim2` (offset as `diagonal`'s): `y` is shaped as
    `diagonal(x, offset, dim1, dim2)` is (the other dims, then the
    diagonal's length), as Paddle's `Tensor.fill_diagonal_tensor`."""
    o = _ops()
    x, y = lift(x), lift(y)
    nd = len(x.shape)
    a1, a2 = dim1 % nd, dim2 % nd
    if a1 == a2:
        raise ValueError(f"fill_diagonal_tensor: dim1 and dim2 must differ, got {dim1} and "
                         f"{dim2}")
    rows, cols = x.shape[a1], x.shape[a2]
    if rows is None or cols is None:
        raise ValueError("fill_diagonal_tensor: the two dims it spans must be known when the "
                         f"program is built, got shape {list(x.shape)}")
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    rest = [d for d in range(nd) if d not in (a1, a2)]
    want = [x.shape[d] for d in rest] + [length]
    if len(y.shape) != len(want) or any(a is not None and b is not None and a != b
                                        for a, b in zip(y.shape, want)):
        raise ValueError(f"fill_diagonal_tensor: y must have shape {want} (x's other dims, "
                         f"then the diagonal's length), got {list(y.shape)}")
    # the diagonal's positions in the (rows, cols) plane, as a constant mask
    plane = np.zeros((rows, cols), dtype=bool)
    r = np.arange(length) + max(0, -offset)
    plane[r, r + offset] = True
    # y spread over the plane: its last dim put on the diagonal (a one-hot matmul)
    spread = np.zeros((length, rows * cols), dtype=np.dtype(x.dtype))
    spread[np.arange(length), (r * cols + r + offset)] = 1
    placed = o.reshape(o.matmul(o.cast(y, x.dtype), lift(spread)),
                       [-1 if d is None else d for d in want[:-1]] + [rows, cols])
    moved = o.transpose(x, rest + [a1, a2])
    filled = o.where(lift(plane), placed, moved)
    back = [0] * nd
    for i, d in enumerate(rest + [a1, a2]):
        back[d] = i
    return o.transpose(filled, back)


def _int64(v):
    return _ops().full([], v, "int64") if isinstance(v, int) else v


def _smaller(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return _ops().minimum(_int64(a), _int64(b))
