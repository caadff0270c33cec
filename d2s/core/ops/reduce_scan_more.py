"""Reductions and scans that ported model code calls (issue 25): amax,
amin, nanmean, count_nonzero, median, quantile, mode, kthvalue,
logcumsumexp, cummax, cummin, trace.

All are compositions of existing ops. Order statistics sort (argsort +
take_along_axis), so their gradient reaches exactly the picked elements.
The scans over one axis (logcumsumexp, cummax, cummin) compare every
position with every earlier one: an (n, n) mask along the axis, exact and
stable (a log-sum-exp shifted by one global max would underflow to -inf
for entries far below it), at the cost of n^2 memory along that axis.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..shapes import normalize_axis
from ._base import constant, lift
from .creation import arange
from .elementwise import (cast, equal, less_equal, logical_not, not_equal, where,
                          zeros_like_)
from .manipulation import flatten, reshape, squeeze, stack, unsqueeze
from .reduction import max as _max, min as _min, sum as _sum
from .search import argsort, take_along_axis
from .shaping import _dim, _int, _take

__all__ = ["amax", "amin", "nanmean", "count_nonzero", "median", "quantile", "mode",
           "kthvalue", "logcumsumexp", "cummax", "cummin", "trace"]


def amax(x, axis=None, keepdim=False, name=None):
    """The largest value over `axis`; equal largest values share the
    gradient evenly (as `max` does in d2s)."""
    return _max(x, axis, keepdim)


def amin(x, axis=None, keepdim=False, name=None):
    """The smallest value over `axis`; ties share the gradient evenly."""
    return _min(x, axis, keepdim)


def nanmean(x, axis=None, keepdim=False, name=None):
    """The mean over `axis` of the entries that are not NaN (NaN where all are)."""
    from .math import isnan
    x = lift(x)
    keep = logical_not(isnan(x))
    total = _sum(where(keep, x, zeros_like_(x)), axis, keepdim)
    count = _sum(cast(keep, x.dtype), axis, keepdim)
    return total / count


def count_nonzero(x, axis=None, keepdim=False, name=None):
    """The number (int64) of nonzero entries over `axis`."""
    x = lift(x)
    return _sum(cast(not_equal(x, 0), "int64"), axis, keepdim)


def _along(x, axis, opname):
    """(x, axis) with axis None meaning the flattened x."""
    x = lift(x)
    if axis is None:
        return flatten(x) if x.shape else reshape(x, [1]), 0, True
    nd = builtins.max(len(x.shape), 1)
    if not x.shape:
        x = reshape(x, [1])
    return x, normalize_axis(_int(axis, opname, "axis"), nd, opname), False


def _known(x, axis, opname):
    n = x.shape[axis]
    if n is None:
        raise ValueError(f"{opname}: the size of axis {axis} of {tuple(x.shape)} must be known "
                         "while building (it picks the positions)")
    if n == 0:
        raise ValueError(f"{opname}: axis {axis} of {tuple(x.shape)} is empty")
    return n


def _pick(sorted_x, axis, i):
    return _take(sorted_x, axis, i, i + 1)


def _finish(v, axis, keepdim, flat, like_nd):
    """Drop (or keep as size 1) the reduced axis; a flattened reduction with
    keepdim has x's rank of ones."""
    if flat:
        v = reshape(v, [1] * like_nd if keepdim else [])
        return v
    return v if keepdim else squeeze(v, axis)


def _with_nan(x, v, axis, keepdim_v):
    """NaN where the slice of x held one (a sort puts NaN last, which would
    otherwise shift the order statistics)."""
    from .math import isnan
    from .reduce_more import any as _any
    if np.dtype(x.dtype).kind != "f":
        return v
    bad = _any(isnan(x), axis, keepdim=True)
    return where(bad, constant(float("nan"), v.dtype), v)


def median(x, axis=None, keepdim=False, mode="avg", name=None):
    """The median over `axis` (all entries when None). mode='avg': the mean
    of the two middle entries of an even count, in float64 for float64 x
    and float32 otherwise (Paddle's dtypes); mode='min': the lower one, in
    x's dtype, with its int64 index when `axis` is given. NaN propagates."""
    if mode not in ("avg", "min"):
        raise ValueError(f"median: mode must be 'avg' or 'min', got {mode!r}")
    nd = len(lift(x).shape)
    xs, ax, flat = _along(x, axis, "median")
    n = _known(xs, ax, "median")
    order = argsort(xs, ax)
    srt = take_along_axis(xs, order, ax)
    lo = (n - 1) // 2
    if mode == "avg":
        dtype = "float64" if np.dtype(xs.dtype) == np.float64 else "float32"
        a = cast(_pick(srt, ax, lo), dtype)
        v = a if n % 2 else (a + cast(_pick(srt, ax, n // 2), dtype)) * 0.5
        v = _with_nan(xs, v, ax, True)
        return _finish(v, ax, keepdim, flat, nd)
    v = _with_nan(xs, _pick(srt, ax, lo), ax, True)
    out = _finish(v, ax, keepdim, flat, nd)
    if axis is None:
        return out
    return out, _finish(_pick(order, ax, lo), ax, keepdim, flat, nd)


_INTERPOLATIONS = ("linear", "lower", "higher", "nearest", "midpoint")


def quantile(x, q, axis=None, keepdim=False, interpolation="linear", name=None):
    """The q-th quantiles over `axis` (numpy's definitions of the five
    `interpolation` modes); a list `q` stacks its results on a new first
    dim. Int x computes in float64."""
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"quantile: interpolation must be one of {_INTERPOLATIONS}, got "
                         f"{interpolation!r}")
    x = lift(x)
    nd = len(x.shape)
    if np.dtype(x.dtype).kind != "f":
        x = cast(x, "float64")
    axes = None if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    if axes is not None and len(axes) > 1:
        axes = [normalize_axis(a, nd, "quantile") for a in axes]
        from .products import moveaxis
        x = moveaxis(x, axes, list(range(nd - len(axes), nd)))
        moved = flatten(x, nd - len(axes), nd - 1)
        xs, ax, flat = moved, nd - len(axes), False
    else:
        xs, ax, flat = _along(x, None if axes is None else axes[0], "quantile")
    n = _known(xs, ax, "quantile")
    qs = q if isinstance(q, (list, tuple)) else [q]
    srt = take_along_axis(xs, argsort(xs, ax), ax)
    outs = []
    for p in qs:
        p = float(p.item() if hasattr(p, "item") else p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"quantile: q must be in [0, 1], got {p}")
        pos = p * (n - 1)
        i, j = int(np.floor(pos)), int(np.ceil(pos))
        a, b = _pick(srt, ax, i), _pick(srt, ax, j)
        frac = pos - i
        if interpolation == "lower" or i == j:
            v = a
        elif interpolation == "higher":
            v = b
        elif interpolation == "nearest":
            v = a if int(np.around(pos)) == i else b
        elif interpolation == "midpoint":
            v = (a + b) * 0.5
        else:
            v = a + (b - a) * frac
        v = _with_nan(xs, v, ax, True)
        if axes is not None and len(axes) > 1:
            if keepdim:
                v = _keep_axes(v, axes, nd, ax)
            else:
                v = squeeze(v, ax)
        else:
            v = _finish(v, ax, keepdim, flat, nd)
        outs.append(v)
    return stack(outs, 0) if isinstance(q, (list, tuple)) else outs[0]


def _keep_axes(v, axes, nd, ax):
    """v (kept axes moved last, merged into one of size 1) back to x's rank
    with size-1 dims at `axes`."""
    v = squeeze(v, ax)
    for a in sorted(axes):
        v = unsqueeze(v, a)
    return v


def kthvalue(x, k, axis=None, keepdim=False, name=None):
    """(the k-th smallest value over `axis` (the last by default), its int64
    index); k counts from 1."""
    x = lift(x)
    axis = -1 if axis is None else axis
    xs, ax, flat = _along(x, axis, "kthvalue")
    n = _known(xs, ax, "kthvalue")
    k = _int(k, "kthvalue", "k")
    if not 1 <= k <= n:
        raise ValueError(f"kthvalue: k must be in [1, {n}], got {k}")
    order = _pick(argsort(xs, ax), ax, k - 1)
    vals = take_along_axis(xs, order, ax)
    nd = len(x.shape)
    return _finish(vals, ax, keepdim, flat, nd), _finish(order, ax, keepdim, flat, nd)


def mode(x, axis=-1, keepdim=False, name=None):
    """(the most frequent value over `axis`, the int64 index of its last
    occurrence); of equally frequent values the smallest."""
    x = lift(x)
    xs, ax, flat = _along(x, axis, "mode")
    n = _known(xs, ax, "mode")
    from .products import moveaxis
    last = moveaxis(xs, ax, -1)
    srt = take_along_axis(last, argsort(last, -1), -1)
    same = cast(equal(unsqueeze(srt, -1), unsqueeze(srt, -2)), "int64")
    counts = _sum(same, -1)  # per sorted position: how often its value occurs
    from .reduction import argmax
    best = argmax(counts, -1, keepdim=True)  # the first: the smallest of the most frequent
    value = take_along_axis(srt, best, -1)
    pos = arange(n, dtype="int64")
    idx = _max(where(equal(last, value), pos, constant(-1, "int64")), -1, keepdim=True)
    vals = take_along_axis(last, idx, -1)
    vals, idx = moveaxis(vals, -1, ax), moveaxis(idx, -1, ax)
    nd = len(x.shape)
    return _finish(vals, ax, keepdim, flat, nd), _finish(idx, ax, keepdim, flat, nd)


# ---- scans ------------------------------------------------------------------------------
def _scan_grid(x, axis, opname, dtype=None):
    """(the axis, x with it moved last, that x with a new axis before its
    last: the (..., j, i) grid of x_i broadcast over j, the (n, n) mask i <= j)."""
    from .products import moveaxis
    if dtype is not None:
        from ..dtypes import as_dtype
        x = cast(x, as_dtype(dtype))
    xs, ax, _ = _along(x, axis, opname)
    last = moveaxis(xs, ax, -1)
    n = _dim(last, -1)
    i = unsqueeze(arange(n, dtype="int64"), 0)
    j = unsqueeze(arange(n, dtype="int64"), 1)
    mask = less_equal(i, j)  # (n, n): row j sees positions i <= j
    grid = unsqueeze(last, -2)  # (..., 1, n): broadcasts over j
    return ax, last, grid, mask


def _unscan(v, ax):
    """The scanned axis (moved last) back at `ax`."""
    from .products import moveaxis
    return moveaxis(v, -1, ax)


def logcumsumexp(x, axis=None, dtype=None, name=None):
    """log(cumsum(exp(x))) along `axis` (the flattened x when None), exact
    for entries of any size (each prefix is its own log-sum-exp)."""
    from .reduce_more import logsumexp
    x = lift(x)
    if np.dtype(x.dtype).kind != "f" and dtype is None:
        dtype = "float32"
    ax, last, grid, mask = _scan_grid(x, axis, "logcumsumexp", dtype)
    minus_inf = constant(float("-inf"), last.dtype)
    out = logsumexp(where(mask, grid, minus_inf), axis=-1)
    return _unscan(out, ax)


def _cum_extreme(x, axis, dtype, largest, opname):
    x = lift(x)
    ax, last, grid, mask = _scan_grid(x, axis, opname)
    kind = np.dtype(last.dtype)
    if kind.kind == "f":
        fill = float("-inf") if largest else float("inf")
    elif kind.kind == "b":
        fill = not largest
    else:
        info = np.iinfo(kind)
        fill = int(info.min if largest else info.max)
    masked = where(mask, grid, constant(fill, last.dtype))
    best = (_max if largest else _min)(masked, -1, keepdim=True)  # (..., n, 1)
    n = _dim(last, -1)
    pos = arange(n, dtype="int64")
    hit = equal(masked, best)
    hit = hit & mask
    # the latest position holding the running extreme (PyTorch's and Paddle's choice)
    idx = _max(where(hit, pos, constant(-1, "int64")), -1)
    vals = take_along_axis(last, idx, -1)
    from ..dtypes import as_dtype
    idx = cast(idx, as_dtype(dtype)) if np.dtype(as_dtype(dtype)) != np.int64 else idx
    return _unscan(vals, ax), _unscan(idx, ax)


def cummax(x, axis=None, dtype="int64", name=None):
    """(the running maximum along `axis` (the flattened x when None), the
    index where it was reached, `dtype`); ties take the later index."""
    return _cum_extreme(x, axis, dtype, True, "cummax")


def cummin(x, axis=None, dtype="int64", name=None):
    """(the running minimum along `axis`, the index where it was reached)."""
    return _cum_extreme(x, axis, dtype, False, "cummin")


def trace(x, offset=0, axis1=0, axis2=1, name=None):
    """The sum of the `offset`-th diagonal of the planes (axis1, axis2)."""
    from .products import _on_diagonal, moveaxis
    x = lift(x)
    nd = len(x.shape)
    if nd < 2:
        raise ValueError(f"trace: x must have at least 2 dims, got {tuple(x.shape)}")
    a1, a2 = normalize_axis(axis1, nd, "trace"), normalize_axis(axis2, nd, "trace")
    if a1 == a2:
        raise ValueError(f"trace: axis1 and axis2 must differ, got {axis1}, {axis2}")
    m = moveaxis(x, [a1, a2], [nd - 2, nd - 1])
    mask = _on_diagonal(_dim(m, -2), _dim(m, -1), _int(offset, "trace", "offset"))
    return _sum(where(mask, m, zeros_like_(m)), [-2, -1])
