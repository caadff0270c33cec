"""Joins and functional scatters that ported model code calls beside the
issue-25 list: atleast_1d/2d/3d, hstack, vstack, dstack, column_stack,
row_stack, index_fill, masked_scatter, scatter_nd, select_scatter,
slice_scatter, diagonal_scatter, broadcast_shape.

Compositions of reshape / concat / where / set_item / the transposed
gather (`getitem_grad`): gradients and backend forms are those ops'.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..shapes import broadcast_shapes, normalize_axis
from ._base import constant, lift
from .elementwise import cast, equal, where
from .manipulation import concat, reshape, unsqueeze
from .shaping import _dim, _int

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "dstack",
           "column_stack", "row_stack", "index_fill", "masked_scatter", "scatter_nd",
           "select_scatter", "slice_scatter", "diagonal_scatter", "broadcast_shape"]


def _at_least(x, nd):
    x = lift(x)
    r = len(x.shape)
    if r >= nd:
        return x
    if nd == 3 and r == 2:  # numpy's rule: (m, n) -> (m, n, 1)
        return unsqueeze(x, -1)
    if nd == 3 and r == 1:  # (n,) -> (1, n, 1)
        return unsqueeze(unsqueeze(x, 0), -1)
    return reshape(x, [1] * (nd - r) + [_dim(x, i) for i in range(r)])


def _each(inputs, nd):
    out = [_at_least(x, nd) for x in inputs]
    return out[0] if len(out) == 1 else out


def atleast_1d(*inputs, name=None):
    """Each input with at least 1 dim (a 0-d tensor becomes shape [1]); one
    input gives a tensor, several a list."""
    return _each(inputs, 1)


def atleast_2d(*inputs, name=None):
    """Each input with at least 2 dims (leading 1s added)."""
    return _each(inputs, 2)


def atleast_3d(*inputs, name=None):
    """Each input with at least 3 dims (numpy's rule: (n,) -> (1, n, 1),
    (m, n) -> (m, n, 1))."""
    return _each(inputs, 3)


def _list(x, opname):
    xs = [lift(v) for v in x]
    if not xs:
        raise ValueError(f"{opname}: x must hold at least one tensor")
    return xs


def hstack(x, name=None):
    """The tensors of `x` joined along axis 1 (axis 0 for 1-D ones)."""
    xs = [_at_least(v, 1) for v in _list(x, "hstack")]
    return concat(xs, axis=0 if len(xs[0].shape) == 1 else 1)


def vstack(x, name=None):
    """The tensors of `x` (each at least 2-D) joined along axis 0."""
    return concat([_at_least(v, 2) for v in _list(x, "vstack")], axis=0)


def row_stack(x, name=None):
    """`vstack`."""
    return vstack(x)


def dstack(x, name=None):
    """The tensors of `x` (each at least 3-D) joined along axis 2."""
    return concat([_at_least(v, 3) for v in _list(x, "dstack")], axis=2)


def column_stack(x, name=None):
    """1-D tensors as columns (and 2-D ones as they are) joined along axis 1."""
    xs = [unsqueeze(v, 1) if len(v.shape) < 2 else v
          for v in (_at_least(u, 1) for u in _list(x, "column_stack"))]
    return concat(xs, axis=1)


def index_fill(x, index, axis, value, name=None):
    """A copy of `x` with its slices at `index` (1-D) along `axis` set to
    `value` (a number or a 0-d tensor)."""
    from .creation import arange
    from .reduction import sum as _sum
    x = lift(x)
    index = lift(index)
    if np.dtype(index.dtype).kind not in "iu" or len(index.shape) != 1:
        raise TypeError(f"index_fill: index must be a 1-D integer tensor, got "
                        f"{index.dtype} {tuple(index.shape)}")
    nd = len(x.shape)
    axis = normalize_axis(_int(axis, "index_fill", "axis"), builtins.max(nd, 1), "index_fill")
    n = _dim(x, axis)
    index = where(index < 0, index + cast(n, index.dtype) if not isinstance(n, int) else
                  index + n, index)
    hit = _sum(cast(equal(unsqueeze(arange(n, dtype=index.dtype), 1), unsqueeze(index, 0)),
                    "int64"), 1) > 0  # (n,): is this position indexed
    hit = reshape(hit, [-1 if i == axis else 1 for i in range(nd)])
    value = lift(value, like=x)
    if np.dtype(value.dtype) != np.dtype(x.dtype):
        value = cast(value, x.dtype)
    return where(hit, value, x)


def masked_scatter(x, mask, value, name=None):
    """A copy of `x` whose entries where `mask` (broadcast to x) is true take
    the leading entries of `value`, in row-major order."""
    from .indexing import getitem
    from .manipulation import expand, flatten
    from .scan import cumsum
    x, mask = lift(x), lift(mask)
    if np.dtype(mask.dtype) != np.bool_:
        raise TypeError(f"masked_scatter: mask must be a bool tensor, got {mask.dtype}")
    shape = broadcast_shapes(tuple(x.shape), tuple(mask.shape), opname="masked_scatter")
    if tuple(mask.shape) != shape:
        if None in shape:
            from ..dispatch import bind
            mask = bind("broadcast_like", mask, x)
        else:
            mask = expand(mask, list(shape))
    value = lift(value, like=x)
    if np.dtype(value.dtype) != np.dtype(x.dtype):
        value = cast(value, x.dtype)
    flat_mask = flatten(mask) if mask.shape else reshape(mask, [1])
    # the k-th true entry takes value's k-th entry
    order = cumsum(cast(flat_mask, "int64")) - 1
    order = where(flat_mask, order, constant(0, "int64"))
    values = flatten(value) if value.shape else reshape(value, [1])
    picked = getitem(values, order)
    picked = reshape(picked, [_dim(x, i) for i in range(len(x.shape))])
    return where(mask, picked, x)


def scatter_nd(index, updates, shape, name=None):
    """Zeros of `shape` (updates' dtype) with `updates` added at the
    positions the last dim of `index` addresses (repeats accumulate)."""
    from .creation import zeros
    from .index_more import scatter_nd_add
    updates = lift(updates)
    return scatter_nd_add(zeros(list(shape), updates.dtype), index, updates)


def select_scatter(x, values, axis, index, name=None):
    """A copy of `x` with its slice `index` along `axis` replaced by `values`."""
    from .set_item import set_item
    x = lift(x)
    nd = len(x.shape)
    axis = normalize_axis(_int(axis, "select_scatter", "axis"), nd, "select_scatter")
    return set_item(x, (builtins.slice(None),) * axis + (_int(index, "select_scatter",
                                                               "index"),), values)


def slice_scatter(x, value, axes=[0], starts=[0], ends=None, strides=[1], name=None):
    """A copy of `x` with the slice `starts:ends:strides` along `axes`
    replaced by `value`."""
    from .set_item import set_item
    x = lift(x)
    nd = len(x.shape)
    axes = [normalize_axis(_int(a, "slice_scatter", "axis"), nd, "slice_scatter") for a in axes]
    ends = [None] * len(axes) if ends is None else list(ends)
    strides = [1] * len(axes) if strides is None else list(strides)
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise ValueError("slice_scatter: axes, starts, ends and strides must have one entry "
                         "per axis")
    index = [builtins.slice(None)] * nd
    for a, s, e, st in zip(axes, starts, ends, strides):
        index[a] = builtins.slice(_int(s, "slice_scatter", "a start"),
                                  None if e is None else _int(e, "slice_scatter", "an end"),
                                  _int(st, "slice_scatter", "a stride"))
    return set_item(x, tuple(index), value)


def diagonal_scatter(x, y, offset=0, axis1=0, axis2=1, name=None):
    """A copy of `x` whose `offset`-th diagonal over (axis1, axis2) is `y`
    (shaped like that diagonal: the other dims, then its length)."""
    from .products import _on_diagonal, diag_embed, moveaxis
    x, y = lift(x), lift(y)
    nd = len(x.shape)
    a1, a2 = (normalize_axis(a, nd, "diagonal_scatter") for a in (axis1, axis2))
    if a1 == a2:
        raise ValueError("diagonal_scatter: axis1 and axis2 must differ")
    offset = _int(offset, "diagonal_scatter", "offset")
    m = moveaxis(x, [a1, a2], [nd - 2, nd - 1])
    rows, cols = m.shape[-2], m.shape[-1]
    if rows is None or cols is None:
        raise ValueError("diagonal_scatter: the two axes' sizes must be known while building")
    y = cast(y, x.dtype) if np.dtype(y.dtype) != np.dtype(x.dtype) else y
    full = diag_embed(y, offset)  # (..., L + |offset|, L + |offset|)
    size = full.shape[-1]
    from .shaping import _take
    if size < rows or size < cols:
        from .creation import zeros
        lead = [_dim(full, i) for i in range(len(full.shape) - 2)]
        if size < rows:
            full = concat([full, zeros(lead + [rows - size, size], full.dtype)], axis=-2)
        if size < cols:
            full = concat([full, zeros(lead + [full.shape[-2], cols - size], full.dtype)],
                          axis=-1)
    full = _take(_take(full, len(full.shape) - 2, 0, rows), len(full.shape) - 1, 0, cols)
    out = where(_on_diagonal(rows, cols, offset), full, m)
    return moveaxis(out, [nd - 2, nd - 1], [a1, a2])


def broadcast_shape(x_shape, y_shape):
    """The shape (a list) two shapes broadcast to."""
    return list(broadcast_shapes(tuple(x_shape), tuple(y_shape), opname="broadcast_shape"))
