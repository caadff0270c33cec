"""Indexing and searching that ported model code calls (issue 25):
repeat_interleave, index_add, index_put, scatter_nd_add, searchsorted,
bucketize, histogram, unique_consecutive, isin.

All are compositions of existing ops: scatters are the transposed gather
(`getitem_grad`, duplicates accumulate) or `set_item`; searches compare
every value with every boundary (no data-dependent loop). Results whose
length depends on the data (repeat_interleave with repeats computed in the
program, unique_consecutive) are built as `nonzero` and `masked_select`
are, from a boolean index: numpy runs them, and a compiling backend runs
such a program on numpy after its warning.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..dtypes import as_dtype
from ..shapes import normalize_axis
from ..tensor import Tensor
from ._base import constant, is_value, lift
from .creation import arange
from .elementwise import (cast, equal, greater_equal, greater_than, less_equal, less_than,
                          logical_not, not_equal, where, zeros_like_)
from .indexing import getitem
from .manipulation import concat, expand, flatten, reshape, unsqueeze
from .reduction import sum as _sum
from .search import _integer_index, _scatter_add, index_select, nd_index
from .shaping import _dim, _int, _take

__all__ = ["repeat_interleave", "index_add", "index_put", "scatter_nd_add", "searchsorted",
           "bucketize", "histogram", "unique_consecutive", "isin"]


def repeat_interleave(x, repeats, axis=None, name=None):
    """Each slice of `x` along `axis` (entry of the flattened x when None)
    repeated `repeats` times: an int, or a 1-D int tensor with one count per
    slice. Counts computed in the program give a data-dependent length."""
    x = lift(x)
    if axis is None:
        x, axis = flatten(x) if x.shape else reshape(x, [1]), 0
    axis = normalize_axis(_int(axis, "repeat_interleave", "axis"), builtins.max(len(x.shape), 1),
                          "repeat_interleave")
    if not x.shape:
        x = reshape(x, [1])
    if isinstance(repeats, Tensor) and repeats.size == 1 and len(repeats.shape) == 0:
        repeats = int(repeats.item())
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        r = int(repeats)
        if r < 0:
            raise ValueError(f"repeat_interleave: repeats must be >= 0, got {r}")
        shape = [_dim(x, i) for i in range(len(x.shape))]
        y = unsqueeze(x, axis + 1)
        if None in x.shape:
            from .shaping import tile
            y = tile(y, [1] * (axis + 1) + [r] + [1] * (len(x.shape) - axis - 1))
        else:
            y = expand(y, shape[:axis + 1] + [r] + shape[axis + 1:])
        return reshape(y, shape[:axis] + [shape[axis] * r] + shape[axis + 1:])
    if isinstance(repeats, (list, tuple, np.ndarray)) or isinstance(repeats, Tensor):
        counts = np.asarray(repeats.numpy() if isinstance(repeats, Tensor) else repeats)
        if counts.ndim != 1 or counts.dtype.kind not in "iu":
            raise ValueError("repeat_interleave: repeats must be an int or a 1-D int tensor")
        if (counts < 0).any():
            raise ValueError("repeat_interleave: repeats must be >= 0")
        n = x.shape[axis]
        if n is not None and len(counts) not in (1, n):
            raise ValueError(f"repeat_interleave: {len(counts)} repeats for axis {axis} of "
                             f"size {n}")
        if len(counts) == 1:
            return repeat_interleave(x, int(counts[0]), axis)
        owner = np.repeat(np.arange(len(counts)), counts).astype(np.int64)
        return index_select(x, constant(owner), axis)
    # counts computed in the program: which slice each output position comes from
    repeats = _integer_index(repeats, "repeat_interleave", "repeats")
    if len(repeats.shape) != 1:
        raise ValueError("repeat_interleave: repeats must be an int or a 1-D int tensor")
    from .scan import cumsum
    ends = cumsum(cast(repeats, "int64"))
    total = _sum(cast(repeats, "int64"))
    pos = arange(total, dtype="int64")
    owner = _sum(cast(less_equal(unsqueeze(ends, 0), unsqueeze(pos, 1)), "int64"), 1)
    return index_select(x, owner, axis)


def _along(axis, index, nd):
    return (builtins.slice(None),) * axis + (index,)


def index_add(x, index, axis, value, name=None):
    """A copy of `x` with the slices of `value` added at positions `index`
    (1-D) along `axis`; repeated positions accumulate."""
    x = lift(x)
    index = _integer_index(index, "index_add")
    if len(index.shape) != 1:
        raise ValueError(f"index_add: index must be 1-D, got shape {tuple(index.shape)}")
    axis = normalize_axis(_int(axis, "index_add", "axis"), len(x.shape), "index_add")
    value = lift(value, like=x)
    if np.dtype(value.dtype) != np.dtype(x.dtype):
        value = cast(value, x.dtype)
    return x + _scatter_add(value, x, _along(axis, index, len(x.shape)))


def index_put(x, indices, value, accumulate=False, name=None):
    """A copy of `x` with `value` (broadcast) written at `x[indices]` (a
    tuple of int or bool tensors, numpy's advanced indexing), or added there
    with `accumulate` (repeated positions then accumulate)."""
    x = lift(x)
    index = tuple(lift(i) for i in indices)
    value = lift(value, like=x)
    if np.dtype(value.dtype) != np.dtype(x.dtype):
        value = cast(value, x.dtype)
    if not accumulate:
        from .set_item import set_item
        return set_item(x, index, value)
    picked = getitem(x, index)
    if tuple(value.shape) != tuple(picked.shape):
        value = value + zeros_like_(picked)  # broadcast to the indexed shape
    return x + _scatter_add(value, x, index)


def scatter_nd_add(x, index, updates, name=None):
    """A copy of `x` with `updates` added at the positions the last dim of
    `index` addresses (its first k dims; Paddle's scatter_nd_add)."""
    x = lift(x)
    index, k = nd_index(x, index, "scatter_nd_add")
    updates = lift(updates, like=x)
    if np.dtype(updates.dtype) != np.dtype(x.dtype):
        updates = cast(updates, x.dtype)
    parts = tuple(getitem(index, (Ellipsis, j)) for j in range(k))
    return x + _scatter_add(updates, x, parts)


def searchsorted(sorted_sequence, values, out_int32=False, right=False, name=None):
    """For each of `values`, the position in `sorted_sequence` (sorted along
    its last dim; leading dims matched with values') where it would be
    inserted to keep the order: before equal entries, or after with
    `right`. int64, or int32 with `out_int32`."""
    seq, values = lift(sorted_sequence), lift(values)
    if not seq.shape:
        raise ValueError("searchsorted: sorted_sequence must have at least 1 dim")
    if len(seq.shape) > 1 and len(seq.shape) != len(values.shape):
        raise ValueError(f"searchsorted: sorted_sequence {tuple(seq.shape)} and values "
                         f"{tuple(values.shape)} must have the same rank (or seq be 1-D)")
    scalar = not values.shape
    v = reshape(values, [1]) if scalar else values
    dtype = np.result_type(np.dtype(seq.dtype), np.dtype(v.dtype))
    s, v = cast(seq, dtype), cast(v, dtype)
    below = (less_equal if right else less_than)(unsqueeze(s, -2), unsqueeze(v, -1))
    out = _sum(cast(below, "int64"), -1)
    out = reshape(out, []) if scalar else out
    return cast(out, "int32") if out_int32 else out


def bucketize(x, sorted_sequence, out_int32=False, right=False, name=None):
    """The bucket of each entry of `x` among the 1-D `sorted_sequence`
    boundaries (`searchsorted(sorted_sequence, x)`)."""
    seq = lift(sorted_sequence)
    if len(seq.shape) != 1:
        raise ValueError(f"bucketize: sorted_sequence must be 1-D, got {tuple(seq.shape)}")
    return searchsorted(seq, x, out_int32, right)


def histogram(input, bins=100, min=0, max=0, weight=None, density=False, name=None):
    """Counts of the entries of `input` in `bins` equal-width bins over
    [min, max] (over the data's own range when both are 0; a zero-width
    range is widened by 1 each side); entries outside are left out. int64,
    or the weights' sums with `weight`; with `density`, float32 values
    that integrate to 1."""
    from .elementwise import minimum
    from .math import floor
    from .reduction import max as _max, min as _min
    x = flatten(lift(input))
    bins = _int(bins, "histogram", "bins")
    if bins <= 0:
        raise ValueError(f"histogram: bins must be positive, got {bins}")
    if float(min) > float(max):
        raise ValueError(f"histogram: min ({min}) must not exceed max ({max})")
    xf = cast(x, "float64")
    if float(min) == 0 and float(max) == 0:
        lo, hi = _min(xf), _max(xf)
    else:
        lo, hi = constant(float(min), "float64"), constant(float(max), "float64")
    same = equal(lo, hi)
    lo = where(same, lo - 1.0, lo)
    hi = where(same, hi + 1.0, hi)
    inside = (greater_equal(xf, lo) & less_equal(xf, hi))
    pos = cast(floor((xf - lo) * float(bins) / (hi - lo)), "int64")
    pos = minimum(pos, constant(bins - 1, "int64"))
    hit = equal(unsqueeze(pos, 1), unsqueeze(arange(bins, dtype="int64"), 0)) & \
        unsqueeze(inside, 1)  # (n, bins)
    if weight is not None:
        w = flatten(lift(weight))
        counts = _sum(where(hit, unsqueeze(w, 1), zeros_like_(unsqueeze(w, 1))), 0)
    else:
        counts = _sum(cast(hit, "int64"), 0)
    if not density:
        return counts
    c = cast(counts, "float32")
    width = cast((hi - lo) / float(bins), "float32")
    return c / (_sum(c) * width)


def unique_consecutive(x, return_inverse=False, return_counts=False, axis=None,
                       dtype="int64", name=None):
    """`x` with each run of equal consecutive entries (slices along `axis`;
    of the flattened x when None) kept once; with `return_inverse` the run
    of each entry, with `return_counts` each run's length (`dtype`). The
    length depends on the data (see the module's note)."""
    from .scan import cumsum
    x = lift(x)
    shape = None
    if axis is None:
        shape = [_dim(x, i) for i in range(len(x.shape))]
        x, axis = flatten(x) if x.shape else reshape(x, [1]), 0
    axis = normalize_axis(_int(axis, "unique_consecutive", "axis"), len(x.shape),
                          "unique_consecutive")
    n = _dim(x, axis)
    nd = len(x.shape)
    nxt, prev = _take(x, axis, 1, None), _take(x, axis, 0, -1)
    differs = not_equal(nxt, prev)
    if nd > 1:
        from .reduce_more import any as _any
        differs = _any(differs, [i for i in range(nd) if i != axis])
    first = constant(np.ones(1, bool))
    starts_mask = concat([first, differs], axis=0)  # (n,): where a run starts
    positions = arange(n, dtype="int64")
    starts = getitem(positions, starts_mask)
    out = index_select(x, starts, axis) if nd > 1 else getitem(x, starts_mask)
    results = [out]
    odt = as_dtype(dtype)
    if return_inverse:
        inverse = cast(cumsum(cast(starts_mask, "int64")) - 1, odt)
        results.append(reshape(inverse, shape) if shape is not None else inverse)
    if return_counts:
        ends = concat([_take(starts, 0, 1, None), reshape(cast(n, "int64") if is_value(n)
                                                           else constant(n, "int64"), [1])], 0)
        results.append(cast(ends - starts, odt))
    return results[0] if len(results) == 1 else tuple(results)


def isin(x, test_x, assume_unique=False, invert=False, name=None):
    """True where an entry of `x` equals some entry of `test_x` (False with
    `invert`)."""
    x, t = lift(x), lift(test_x)
    dtype = np.result_type(np.dtype(x.dtype), np.dtype(t.dtype))
    t = flatten(cast(t, dtype)) if t.shape else reshape(cast(t, dtype), [1])
    found = _sum(cast(equal(unsqueeze(cast(x, dtype), -1), t), "int64"), -1)
    hit = greater_than(found, 0)
    return logical_not(hit) if invert else hit
