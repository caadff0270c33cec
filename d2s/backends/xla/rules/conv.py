"""XLA rules of the convolution and pooling family (`d2s/core/ops/conv_nd.py`),
one rule per op for every member (2-D and 3-D), over NC + N spatial dims.

The forward ops are `lax.conv_general_dilated` and `lax.reduce_window`; the
gradient ops are convolutions too (the input's: a convolution of the
cotangent dilated by the stride with the flipped, transposed filter; the
filter's: a convolution of the input with the cotangent as the window), so
XLA sees the forms its own autodiff would emit. The pooling gradients add
the cotangent back at each kernel offset (one strided update per offset).
Shapes are concrete when XLA traces: the dims a program left unknown are
known here.
"""
from __future__ import annotations

import numpy as np

from ....core.ops.conv_nd import (MEMBERS, given_dims, grad_input_dims, lohi, low, out_shape,
                                  pool_counts, pool_extents, taps, window)
from ....core.registry import register_lowering


def _highest(ns):
    return ns.lax.Precision.HIGHEST


def _spatial(nd):
    return "DHW"[-nd:]


def _size(attrs):
    """The member's one size attribute (`input_hw`, `kernel_dhw`, ...)."""
    (value,) = attrs.values()
    return tuple(value)


def _conv(ns, x, w, stride, padding, dilation, groups):
    x, w = ns.promote(x, w)
    sp = _spatial(len(stride))
    return ns.lax.conv_general_dilated(
        x, w, window_strides=stride, padding=tuple(zip(*lohi(padding))), rhs_dilation=dilation,
        dimension_numbers=("NC" + sp, "OI" + sp, "NC" + sp), feature_group_count=groups,
        precision=_highest(ns))


def _conv_grad_input(ns, g, w, *like, stride, padding, dilation, groups, output_padding=None,
                     **size):
    g, w = ns.promote(g, w)
    nd = len(stride)
    o, cg = w.shape[:2]
    kernel = tuple(w.shape[2:])
    og = o // groups
    # (O, Cg, k...) -> (C, Og, k...) per group, flipped in space
    wt = w.reshape((groups, og, cg) + kernel).transpose((0, 2, 1) + tuple(range(3, 3 + nd)))
    wt = wt.reshape((groups * cg, og) + kernel)[(slice(None),) * 2
                                                + (slice(None, None, -1),) * nd]
    out = tuple(g.shape[2:])
    dims = grad_input_dims(_size(size), like, out, kernel, stride, dilation, padding,
                           output_padding)
    pads = [(d * (k - 1) - lo, n - 1 - (m - 1) * s + lo) for n, m, k, s, d, lo in
            zip(dims, out, kernel, stride, dilation, lohi(padding)[0])]
    sp = _spatial(nd)
    return ns.lax.conv_general_dilated(
        g, wt, window_strides=(1,) * nd, padding=tuple(pads), lhs_dilation=stride,
        rhs_dilation=dilation, dimension_numbers=("NC" + sp, "OI" + sp, "NC" + sp),
        feature_group_count=groups, precision=_highest(ns))


def _conv_grad_filter(ns, x, g, stride, padding, dilation, groups, **size):
    x, g = ns.promote(x, g)
    pads = []
    for n, k, s, d, lo, hi, m in zip(x.shape[2:], _size(size), stride, dilation,
                                     *lohi(padding), g.shape[2:]):
        unused = n + lo + hi - (d * (k - 1) + 1) - (m - 1) * s  # rows no window reads
        pads.append((lo, hi - unused))
    # the input's channels as the batch, its batch as the features; the
    # cotangent is the window (dilated by the stride), stepped by the dilation
    sp = _spatial(len(stride))
    return ns.lax.conv_general_dilated(
        x, g, window_strides=dilation, padding=tuple(pads), rhs_dilation=stride,
        dimension_numbers=("CN" + sp, "IO" + sp, "CN" + sp), batch_group_count=groups,
        precision=_highest(ns))


def _reduce_pads(spatial, kernel, stride, padding, ceil_mode):
    """reduce_window's padding (ceil mode's extents included) and the output dims."""
    out = out_shape(spatial, kernel, stride, padding, None, ceil_mode)
    ext = pool_extents(spatial, kernel, stride, padding, out)
    return ((0, 0), (0, 0)) + tuple(zip(*lohi(ext))), out


def _unpad(xp, pads, spatial):
    return xp[(slice(None),) * 2 + tuple(slice(lo, lo + n) for (lo, _), n in
                                         zip(pads[2:], spatial))]


def _max_pool(ns, x, kernel, stride, padding, ceil_mode):
    pads, _ = _reduce_pads(x.shape[2:], kernel, stride, padding, ceil_mode)
    return ns.lax.reduce_window(x, np.asarray(low(np.dtype(x.dtype)), x.dtype), ns.lax.max,
                                (1, 1) + tuple(kernel), (1, 1) + tuple(stride), pads)


def _first_max_masks(ns, x, kernel, stride, padding, ceil_mode):
    """Per kernel offset, where that offset holds its window's first maximum;
    and the padded input's geometry."""
    jnp = ns.jnp
    pads, out = _reduce_pads(x.shape[2:], kernel, stride, padding, ceil_mode)
    xp = jnp.pad(x, pads, constant_values=np.asarray(low(np.dtype(x.dtype)), x.dtype))
    best = _max_pool(ns, x, kernel, stride, padding, ceil_mode)
    free = jnp.ones(best.shape, bool)
    masks = []
    for _, off in taps(kernel, (1,) * len(kernel)):
        idx = window(off, stride, out)
        hit = (xp[idx] == best) & free
        free = free & ~hit
        masks.append((idx, hit))
    return masks, pads, out, xp.shape


def _max_pool_grad(ns, g, x, best, kernel, stride, padding, ceil_mode):
    """jax's own gradient of `reduce_window(max)`: XLA's select-and-scatter,
    whose `>=` selection keeps each window's first maximum in row-major order,
    the numpy kernel's choice (the per-offset masks below stay for integer
    inputs and for the second-order `max_pool*_pick`)."""
    if np.dtype(x.dtype).kind != "f" or np.dtype(g.dtype) != np.dtype(x.dtype):
        return _max_pool_grad_masked(ns, g, x, kernel, stride, padding, ceil_mode)
    _, pull = ns.jax.vjp(lambda v: _max_pool(ns, v, kernel, stride, padding, ceil_mode), x)
    return pull(g)[0]


def _max_pool_grad_masked(ns, g, x, kernel, stride, padding, ceil_mode):
    jnp = ns.jnp
    masks, pads, _, padded = _first_max_masks(ns, x, kernel, stride, padding, ceil_mode)
    gxp = jnp.zeros(padded, g.dtype)
    for idx, hit in masks:
        gxp = gxp.at[idx].add(jnp.where(hit, g, 0))
    return _unpad(gxp, pads, x.shape[2:])


def _max_pool_pick(ns, v, x, kernel, stride, padding, ceil_mode):
    jnp = ns.jnp
    masks, pads, out, _ = _first_max_masks(ns, x, kernel, stride, padding, ceil_mode)
    vp = jnp.pad(v, pads)
    picked = jnp.zeros(tuple(v.shape[:2]) + tuple(out), v.dtype)
    for idx, hit in masks:
        picked = picked + jnp.where(hit, vp[idx], 0)
    return picked


def _avg_pool(ns, x, kernel, stride, padding, ceil_mode, exclusive):
    pads, _ = _reduce_pads(x.shape[2:], kernel, stride, padding, ceil_mode)
    total = ns.lax.reduce_window(x, np.asarray(0, x.dtype), ns.lax.add, (1, 1) + tuple(kernel),
                                 (1, 1) + tuple(stride), pads)
    counts = pool_counts(tuple(x.shape[2:]), kernel, stride, padding, ceil_mode, exclusive)
    return total / counts.astype(x.dtype)


def _avg_pool_grad(ns, g, *like, kernel, stride, padding, ceil_mode, exclusive, **size):
    jnp = ns.jnp
    spatial = given_dims(_size(size), like)
    pads, out = _reduce_pads(spatial, kernel, stride, padding, ceil_mode)
    share = g / pool_counts(spatial, kernel, stride, padding, ceil_mode,
                            exclusive).astype(g.dtype)
    gxp = jnp.zeros(tuple(g.shape[:2]) + tuple(n + lo + hi for n, (lo, hi) in
                                               zip(spatial, pads[2:])), g.dtype)
    for _, off in taps(kernel, (1,) * len(kernel)):
        gxp = gxp.at[window(off, stride, out)].add(share)
    return _unpad(gxp, pads, spatial)


for _m in MEMBERS.values():
    for _name, _rule in ((_m.op("conv"), _conv),
                         (_m.op("conv", "_grad_input"), _conv_grad_input),
                         (_m.op("conv", "_grad_filter"), _conv_grad_filter),
                         (_m.op("max_pool"), _max_pool),
                         (_m.op("max_pool", "_grad"), _max_pool_grad),
                         (_m.op("max_pool", "_pick"), _max_pool_pick),
                         (_m.op("avg_pool"), _avg_pool),
                         (_m.op("avg_pool", "_grad"), _avg_pool_grad)):
        register_lowering("xla", _name, _rule)
