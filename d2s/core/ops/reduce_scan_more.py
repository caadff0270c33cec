"""Reductions and scans that ported model code calls (issue 25): amax,
amin, nanmean, count_nonzero, median, quantile, mode, kthvalue,
logcumsumexp, cummax, cummin, trace.

Most are compositions of existing ops. Order statistics sort (argsort +
take_along_axis), so their gradient reaches exactly the picked elements.
The scans over one axis are primitives (`logcumsumexp`, `cum_extreme`):
a composite would compare every position with every earlier one (n^2
memory along the axis), and a log-sum-exp shifted by one global max would
underflow to -inf for entries far below it. Their xla rules are JAX's
scans; ONNX has no such scan (`rules/reduce_scan_more.py`).
"""
from __future__ import annotations

import builtins

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import normalize_axis
from ._base import constant, lift
from .creation import arange
from .elementwise import (cast, equal, exp, log, logical_not, not_equal, where, zeros_like_)
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


# ---- scans (primitives: one pass, where an (n, n) composite costs n^2 memory) -----------
def _scan_axis(x, axis, opname):
    """(x, axis): axis None means the flattened x; a 0-d x is read as [x]."""
    x = lift(x)
    if axis is None:
        return (flatten(x) if x.shape else reshape(x, [1])), 0
    if not x.shape:
        return reshape(x, [1]), 0
    return x, normalize_axis(_int(axis, opname, "axis"), len(x.shape), opname)


def _logcumsumexp_kernel(x, axis, reverse):
    if reverse:
        return np.flip(np.logaddexp.accumulate(np.flip(x, axis), axis=axis), axis)
    return np.logaddexp.accumulate(x, axis=axis)


def _logcumsumexp_vjp(g, out, x, axis, reverse):
    """d out_j / d x_i = exp(x_i - out_j) for the j at or after i: the sum
    over j of g_j exp(x_i - out_j), taken in log space (the opposite scan of
    log(g_j) - out_j, for the positive and the negative parts of g apart)
    so that no exp overflows. A slice that is -inf so far adds nothing."""
    from .math_more import isneginf
    from .elementwise import greater_than, less_than, neg
    minus_inf = constant(float("-inf"), x.dtype)
    one = constant(1.0, x.dtype)
    stuck = isneginf(out)
    parts = []
    for pick, sign in ((greater_than, g), (less_than, neg(g))):
        on = pick(g, 0)
        logs = where(on, log(where(on, sign, one)), minus_inf)
        logs = where(stuck, minus_inf, logs - where(stuck, zeros_like_(out), out))
        acc = bind("logcumsumexp", logs, axis=axis, reverse=not reverse)
        parts.append(exp(x + acc))
    return (parts[0] - parts[1],)


register_op("logcumsumexp", _logcumsumexp_kernel,
            lambda x, axis, reverse: Aval(tuple(x.shape), np.dtype(x.dtype)),
            _logcumsumexp_vjp)


def logcumsumexp(x, axis=None, dtype=None, name=None):
    """log(cumsum(exp(x))) along `axis` (the flattened x when None), exact
    for entries of any size (each step is a log-add-exp); ints compute in
    float32 unless `dtype`."""
    x = lift(x)
    if dtype is not None:
        from ..dtypes import as_dtype
        x = cast(x, as_dtype(dtype))
    elif np.dtype(x.dtype).kind != "f":
        x = cast(x, "float32")
    x, axis = _scan_axis(x, axis, "logcumsumexp")
    return bind("logcumsumexp", x, axis=axis, reverse=False)


def _positions(shape, axis):
    return np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])


def _cum_extreme_kernel(x, axis, largest):
    """(running max or min along axis, the latest index where it was reached:
    PyTorch's choice on ties; a NaN, once met, is the value and its index)."""
    v = (np.maximum if largest else np.minimum).accumulate(x, axis=axis)
    hit = x == v
    if x.dtype.kind == "f":
        hit |= np.isnan(x)
    idx = np.maximum.accumulate(np.where(hit, _positions(x.shape, axis), -1), axis=axis)
    return v, idx.astype(np.int64)


def _cum_extreme_infer(x, axis, largest):
    return Aval(tuple(x.shape), np.dtype(x.dtype)), Aval(tuple(x.shape), np.dtype("int64"))


def _cum_extreme_vjp(g, out, x, axis, largest):
    """The values' cotangent added back where each running extreme was read."""
    from .search import _along_axis_index, _scatter_add
    if g[0] is None:
        return (None,)
    return (_scatter_add(g[0], x, _along_axis_index(x, out[1], axis)),)


register_op("cum_extreme", _cum_extreme_kernel, _cum_extreme_infer, vjp=_cum_extreme_vjp,
            num_outputs=2)


def _cum_extreme(x, axis, dtype, largest, opname):
    from ..dtypes import as_dtype
    x, axis = _scan_axis(x, axis, opname)
    vals, idx = bind("cum_extreme", x, axis=axis, largest=largest)
    if as_dtype(dtype) != np.int64:
        idx = cast(idx, as_dtype(dtype))
    return vals, idx


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
