"""Sorting, searching and index-driven selection: argsort (a primitive),
sort, topk, take_along_axis, put_along_axis, index_select, index_sample,
gather_nd, scatter, masked_fill, masked_select.

Only `argsort` and `topk` are new to the backends; the rest are
compositions of them and of `getitem` / `getitem_grad` (numpy's advanced
indexing and its scatter-add transpose), `where` and comparisons: their
gradients, shape rules and xla / ONNX forms are those ops'. Both sorts are
stable: equal values keep their order (descending too), as numpy's stable
sort, JAX's and ONNX's TopK do, so every backend picks the same indices.
(`topk` is a primitive, not argsort + slice + gather, because a model calls
it on every decoding step: one kernel instead of three ops and their index
bookkeeping.)
"""
from __future__ import annotations

import functools

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import broadcast_shapes, normalize_axis
from ._base import is_value, lift

__all__ = ["argsort", "sort", "topk", "take_along_axis", "put_along_axis", "index_select",
           "index_sample", "gather_nd", "scatter", "masked_fill", "masked_select"]


# ---- argsort (the primitive) ----------------------------------------------------------
def _argsort_kernel(x, axis, descending):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False)
    # stable descending: sort the reversed axis ascending, then read it backwards
    n = x.shape[axis]
    idx = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    return (n - 1 - idx).astype(np.int64, copy=False)


register_op("argsort", _argsort_kernel,
            lambda x, axis, descending: Aval(tuple(x.shape), np.dtype("int64")))


def _dim(x, i):
    """Dim `i` of `x`: an int, or a 0-d int64 value when known only at run time."""
    d = x.shape[i]
    if d is not None:
        return d
    from .creation import shape
    from .indexing import getitem
    return getitem(shape(x), i)


def _check_axis(x, axis, opname):
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{opname}: axis must be an int, got {axis!r}")
    return normalize_axis(int(axis), max(len(x.shape), 1), opname)


def argsort(x, axis=-1, descending=False, stable=False, name=None):
    """Indices (int64) that sort `x` along `axis`; always stable (ties keep
    their order), so `stable=` changes nothing."""
    x = lift(x)
    axis = _check_axis(x, axis, "argsort")
    if not x.shape:
        from .creation import zeros
        return zeros([], "int64")
    return bind("argsort", x, axis=axis, descending=bool(descending))


# ---- selection along an axis (composites of getitem) -----------------------------------
def _along_axis_index(x, indices, axis):
    """The advanced index picking `indices` along `axis` of `x`, numpy's
    `take_along_axis`: an `arange` for every other axis, shaped to broadcast
    with `indices` (which, like `x`, has x's rank)."""
    from .creation import arange
    from .manipulation import reshape
    ndim = len(x.shape)
    if ndim == 1:
        return (indices,)
    index = []
    for i in range(ndim):
        if i == axis:
            index.append(indices)
        else:
            shape = [1] * ndim
            shape[i] = -1
            d = x.shape[i]
            # a known dim: the positions are a numpy constant (no ops to run)
            index.append(np.arange(d).reshape(shape) if d is not None
                         else reshape(arange(_dim(x, i)), shape))
    return tuple(index)


def _integer_index(index, opname, what="index"):
    index = lift(index)
    if np.dtype(index.dtype).kind not in "iu":
        raise TypeError(f"{opname}: {what} must be an integer tensor, got {index.dtype}")
    return index


def take_along_axis(arr, indices, axis, broadcast=True, name=None):
    """`arr` read at `indices` along `axis` (numpy's `take_along_axis`):
    `indices` has arr's rank; its other dims broadcast against arr's."""
    from .indexing import getitem
    arr = lift(arr)
    indices = _integer_index(indices, "take_along_axis", "indices")
    if len(indices.shape) != len(arr.shape):
        raise ValueError(f"take_along_axis: indices of rank {len(indices.shape)} for an array "
                         f"of rank {len(arr.shape)} (they must have the same rank)")
    axis = _check_axis(arr, axis, "take_along_axis")
    if not broadcast:
        for i, (a, b) in enumerate(zip(arr.shape, indices.shape)):
            if i != axis and None not in (a, b) and a != b:
                raise ValueError(f"take_along_axis: with broadcast=False indices {indices.shape} "
                                 f"must match arr {arr.shape} except along axis {axis}")
    return getitem(arr, _along_axis_index(arr, indices, axis))


def _scatter_add(values, like, index):
    """Zeros shaped like `like`, with `values` added at the advanced `index`
    (the transpose of `like[index]`; duplicate positions accumulate)."""
    from .indexing import encode_index
    spec, tensors = encode_index(index)
    return bind("getitem_grad", values, like, *tensors, spec=spec)


def _last_wins(indices, axis):
    """Bool mask, shaped like `indices`: True where no later entry along
    `axis` (in the same row) names the same position. Assigning only those
    gives "the last write wins" on every backend (a scatter's order with
    duplicates is otherwise unspecified)."""
    from .creation import arange
    from .elementwise import equal, greater_than, logical_and, logical_not
    from .manipulation import transpose, unsqueeze
    from .reduction import sum as _sum
    ndim = len(indices.shape)
    perm = [i for i in range(ndim) if i != axis] + [axis]
    moved = transpose(indices, perm) if perm != list(range(ndim)) else indices
    m = _dim(moved, ndim - 1)
    same = equal(unsqueeze(moved, -1), unsqueeze(moved, -2))        # (..., m, m)
    order = arange(m)
    later = greater_than(unsqueeze(order, 0), unsqueeze(order, 1))  # [j, j']: j' > j
    shadowed = _sum(logical_and(same, later), axis=-1) > 0
    wins = logical_not(shadowed)
    inverse = [perm.index(i) for i in range(ndim)]
    return transpose(wins, inverse) if perm != list(range(ndim)) else wins


def put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True,
                   broadcast=True, name=None):
    """A copy of `arr` with `values` written at `indices` along `axis` (the
    inverse of `take_along_axis`). `reduce="assign"`: where an index repeats
    in a row the last value wins; `"add"`: values add to arr's."""
    from .elementwise import cast, greater_than, where
    from .manipulation import expand
    arr = lift(arr)
    indices = _integer_index(indices, "put_along_axis", "indices")
    if len(indices.shape) != len(arr.shape):
        raise ValueError(f"put_along_axis: indices of rank {len(indices.shape)} for an array "
                         f"of rank {len(arr.shape)} (they must have the same rank)")
    if reduce not in ("assign", "add"):
        raise ValueError(f"put_along_axis: reduce={reduce!r} is not supported "
                         "(use 'assign' or 'add')")
    if not include_self:
        raise ValueError("put_along_axis: include_self=False is not supported")
    axis = _check_axis(arr, axis, "put_along_axis")
    values = lift(values, like=arr)
    values = cast(values, arr.dtype) if np.dtype(values.dtype) != np.dtype(arr.dtype) else values
    index = _along_axis_index(arr, indices, axis)
    shape = broadcast_shapes(*(tuple(i.shape) for i in index), opname="put_along_axis")
    if tuple(values.shape) != shape:
        values = expand(values, [-1 if d is None else d for d in shape]) if None not in shape \
            else bind("broadcast_like", values, indices)
    if reduce == "add":
        return arr + _scatter_add(values, arr, index)
    from .elementwise import zeros_like_
    wins = _last_wins(bind("broadcast_like", indices, values), axis)
    kept = where(wins, values, zeros_like_(values))
    hit = greater_than(_scatter_add(cast(wins, "float64"),
                                    bind("full_like", arr, fill_value=0, dtype="float64"),
                                    index), 0)
    return where(hit, _scatter_add(kept, arr, index), arr)


def index_select(x, index, axis=0, name=None):
    """Slices of `x` along `axis` at the 1-D integer `index` (Paddle's index_select)."""
    from .manipulation import gather
    index = _integer_index(index, "index_select")
    if len(index.shape) != 1:
        raise ValueError(f"index_select: index must be 1-D, got shape {tuple(index.shape)}")
    return gather(x, index, axis=axis)


def index_sample(x, index):
    """`out[i, j] = x[i, index[i, j]]` for 2-D x and index (Paddle's index_sample)."""
    x = lift(x)
    index = _integer_index(index, "index_sample")
    if len(x.shape) != 2 or len(index.shape) != 2:
        raise ValueError(f"index_sample: x and index must be 2-D, got {tuple(x.shape)} and "
                         f"{tuple(index.shape)}")
    return take_along_axis(x, index, axis=1)


def nd_index(x, index, opname):
    """(index as an integer tensor, k): the last dim of `index`, which must be
    known while building, is how many leading dims of `x` it addresses."""
    index = _integer_index(index, opname)
    if not index.shape or index.shape[-1] is None:
        raise ValueError(f"{opname}: the last dim of index (how many dims of x it "
                         "addresses) must be known while building")
    k = index.shape[-1]
    if k > len(x.shape):
        raise ValueError(f"{opname}: index addresses {k} dims, x {tuple(x.shape)} has "
                         f"{len(x.shape)}")
    return index, k


def gather_nd(x, index, name=None):
    """`out[i...] = x[index[i..., 0], ..., index[i..., k-1]]`: the last dim of
    `index` (k, known while building) addresses the first k dims of `x`."""
    from .indexing import getitem
    x = lift(x)
    index, k = nd_index(x, index, "gather_nd")
    if k == 0:
        from .manipulation import expand, unsqueeze
        lead = list(index.shape[:-1])
        out = x
        for _ in lead:
            out = unsqueeze(out, 0)
        return expand(out, lead + list(x.shape)) if None not in lead + list(x.shape) else out
    return getitem(x, tuple(getitem(index, (Ellipsis, j)) for j in range(k)))


def scatter(x, index, updates, overwrite=True, name=None):
    """A copy of `x` whose rows `index` (1-D) are `updates`' rows. With
    `overwrite=True` a repeated index keeps its last update; with False the
    indexed rows are zeroed and their updates summed."""
    from .elementwise import cast, greater_than, where, zeros_like_
    from .manipulation import unsqueeze
    x = lift(x)
    index = _integer_index(index, "scatter")
    if len(index.shape) != 1:
        raise ValueError(f"scatter: index must be 1-D, got shape {tuple(index.shape)}")
    updates = lift(updates, like=x)
    if np.dtype(updates.dtype) != np.dtype(x.dtype):
        updates = cast(updates, x.dtype)
    if len(updates.shape) != len(x.shape):
        raise ValueError(f"scatter: updates {tuple(updates.shape)} must have x's rank "
                         f"({len(x.shape)})")
    ones = bind("full_like", updates, fill_value=1, dtype="float64")
    hit_rows = greater_than(_scatter_add(ones, bind("full_like", x, fill_value=0,
                                                    dtype="float64"), (index,)), 0)
    if overwrite:
        wins = _last_wins(index, 0)
        mask = wins
        for _ in range(len(x.shape) - 1):
            mask = unsqueeze(mask, -1)
        updates = where(mask, updates, zeros_like_(updates))
    return where(hit_rows, _scatter_add(updates, x, (index,)), x)


def masked_fill(x, mask, value, name=None):
    """`x` with `value` where `mask` is true (x's dtype; mask broadcasts)."""
    from .elementwise import cast, where
    x = lift(x)
    value = lift(value, like=x)
    if np.dtype(value.dtype) != np.dtype(x.dtype):  # (an int x filled with 1.5 stays int)
        value = cast(value, x.dtype)
    return where(mask, value, x)


def masked_select(x, mask, name=None):
    """The elements of `x` where `mask` (broadcast together) is true, as a 1-D
    tensor: its length depends on the data (the xla backend runs such a
    program on numpy, after its warning)."""
    from .indexing import getitem
    from .manipulation import expand
    x, mask = lift(x), lift(mask)
    if np.dtype(mask.dtype) != np.bool_:
        raise TypeError(f"masked_select: mask must be a bool tensor, got {mask.dtype}")
    shape = broadcast_shapes(tuple(x.shape), tuple(mask.shape), opname="masked_select")
    if None in shape:
        x, mask = bind("broadcast_like", x, mask), bind("broadcast_like", mask, x)
    else:
        if tuple(x.shape) != shape:
            x = expand(x, list(shape))
        if tuple(mask.shape) != shape:
            mask = expand(mask, list(shape))
    return getitem(x, mask)


# ---- sort / topk ------------------------------------------------------------------------
def sort(x, axis=-1, descending=False, stable=False, name=None):
    """`x` sorted along `axis` (values; see `argsort` for the indices)."""
    x = lift(x)
    if not x.shape:
        return x
    return take_along_axis(x, argsort(x, axis, descending), axis)


def topk(x, k, axis=None, largest=True, sorted=True, name=None):
    """(values, int64 indices) of the `k` largest (or smallest) entries along
    `axis` (the last by default), largest first; ties keep their order. `k`
    is an int (or an eager 0-d tensor) no larger than the axis. `sorted`
    changes nothing: the result is always sorted."""
    x = lift(x)
    if is_value(k):
        from ..tensor import Tensor
        if not isinstance(k, Tensor):
            return _topk_run_time_k(x, k, axis, largest)
        k = int(k.item())
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
        raise ValueError(f"topk: k must be a non-negative int, got {k!r}")
    if not x.shape:
        raise ValueError("topk: x must have at least one dim")
    axis = _check_axis(x, -1 if axis is None else axis, "topk")
    n = x.shape[axis]
    if n is not None and k > n:
        raise ValueError(f"topk: k={k} is larger than the size {n} of axis {axis} of x "
                         f"{tuple(x.shape)}")
    return bind("topk", x, k=int(k), axis=axis, largest=bool(largest))


def _topk_run_time_k(x, k, axis, largest):
    """`topk` with `k` computed in the program (torchvision's
    `min(topk_candidates, scores.shape[0])` after a score filter): the first
    `k` of the stable sort along the axis (the entries and ties `topk`
    picks), their count known at run time."""
    from .indexing import getitem
    if len(k.shape) != 0 or np.dtype(k.dtype).kind not in "iu":
        raise TypeError(f"topk: k must be an int or a 0-d integer tensor, got a "
                        f"{np.dtype(k.dtype).name} tensor of shape {list(k.shape)}")
    if not x.shape:
        raise ValueError("topk: x must have at least one dim")
    axis = _check_axis(x, -1 if axis is None else axis, "topk")
    n = x.shape[axis] if x.shape[axis] is not None else _dim(x, axis)
    bind("assert", (k >= 0) & (k <= n),
         message=f"topk: k is negative or larger than the size of axis {axis} of x")
    order = argsort(x, axis=axis, descending=largest)
    idx = getitem(order, (slice(None),) * axis + (slice(None, k),))
    return take_along_axis(x, idx, axis), idx


def _topk_kernel(x, k, axis, largest):
    n = x.shape[axis]
    if k > n:  # (a dim unknown while building)
        raise ValueError(f"topk: k={k} is larger than the size {n} of axis {axis} of x "
                         f"{x.shape}")
    head = (slice(None),) * axis
    if largest:
        # stable descending, as argsort's kernel: the reversed axis sorted
        # ascending, whose last k, read backwards, are the first k
        order = x[head + (slice(None, None, -1),)].argsort(axis=axis, kind="stable")
        idx = n - 1 - order[head + (slice(n - 1, n - 1 - k if k < n else None, -1),)]
    else:
        idx = x.argsort(axis=axis, kind="stable")[head + (slice(0, k),)]
    # (the array methods, not np.argsort: its wrapper costs a call per call)
    idx = idx.astype(np.int64, copy=False)
    index = list(_other_axes(x.shape, axis))  # numpy's take_along_axis, less its wrapper
    index[axis] = idx
    return x[tuple(index)], idx


@functools.lru_cache(maxsize=256)
def _other_axes(shape, axis):
    """For each axis of an array of `shape` but `axis`, its positions shaped to
    broadcast along it (the index `take_along_axis` builds every call)."""
    grid = []
    for i, d in enumerate(shape):
        if i == axis:
            grid.append(None)
            continue
        positions = np.arange(d).reshape([-1 if j == i else 1 for j in range(len(shape))])
        positions.flags.writeable = False
        grid.append(positions)
    return tuple(grid)


def _topk_infer(x, k, axis, largest):
    shape = tuple(k if i == axis else d for i, d in enumerate(x.shape))
    return Aval(shape, np.dtype(x.dtype)), Aval(shape, np.dtype("int64"))


def _topk_vjp(g, out, x, k, axis, largest):
    """The values' cotangent scattered back to where they were read."""
    if g[0] is None:
        return (None,)
    return (_scatter_add(g[0], x, _along_axis_index(x, out[1], axis)),)


register_op("topk", _topk_kernel, _topk_infer, vjp=_topk_vjp, num_outputs=2, fresh=True,
            checks=lambda op: op.inputs[0].shape[op.attrs["axis"]] is None)
