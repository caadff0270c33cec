"""XLA rules of the convolution and pooling ops (`d2s/core/ops/conv.py`).

The forward ops are `lax.conv_general_dilated` and `lax.reduce_window`; the
gradient ops are convolutions too (the input's: a convolution of the
cotangent dilated by the stride with the flipped, transposed filter; the
filter's: a convolution of the input with the cotangent as the window), so
XLA sees the forms its own autodiff would emit. The pooling gradients add
the cotangent back at each kernel offset (one strided update per offset).
"""
from __future__ import annotations

import numpy as np

from ....core.ops.conv import (_pool_extents, _pool_geometry, _taps, avg_pool_counts, given_hw,
                               grad_input_hw)
from ....core.registry import lowers

_NCHW = ("NCHW", "OIHW", "NCHW")


def _highest(ns):
    return ns.lax.Precision.HIGHEST


@lowers("xla", "conv2d")
def _conv2d(ns, x, w, stride, padding, dilation, groups):
    x, w = ns.promote(x, w)
    t, b, l, r = padding
    return ns.lax.conv_general_dilated(
        x, w, window_strides=stride, padding=((t, b), (l, r)), rhs_dilation=dilation,
        dimension_numbers=_NCHW, feature_group_count=groups, precision=_highest(ns))


@lowers("xla", "conv2d_grad_input")
def _conv2d_grad_input(ns, g, w, *like, input_hw, stride, padding, dilation, groups,
                       output_padding=(0, 0)):
    g, w = ns.promote(g, w)
    o, cg, kh, kw = w.shape
    og = o // groups
    # (O, Cg, kh, kw) -> (C, Og, kh, kw) per group, flipped in space
    wt = w.reshape(groups, og, cg, kh, kw).transpose(0, 2, 1, 3, 4)
    wt = wt.reshape(groups * cg, og, kh, kw)[:, :, ::-1, ::-1]
    # shapes are concrete when XLA traces: dims unknown when built are known here
    hw = grad_input_hw(input_hw, like, tuple(g.shape[2:]), (kh, kw), stride, dilation, padding,
                       output_padding)
    pads = []
    for size, k, s, d, lo, hi, n_out in zip(hw, (kh, kw), stride, dilation,
                                            (padding[0], padding[2]), (padding[1], padding[3]),
                                            g.shape[2:]):
        span = d * (k - 1)
        pads.append((span - lo, size - 1 - (n_out - 1) * s + lo))
    return ns.lax.conv_general_dilated(
        g, wt, window_strides=(1, 1), padding=tuple(pads), lhs_dilation=stride,
        rhs_dilation=dilation, dimension_numbers=_NCHW, feature_group_count=groups,
        precision=_highest(ns))


@lowers("xla", "conv2d_grad_filter")
def _conv2d_grad_filter(ns, x, g, kernel_hw, stride, padding, dilation, groups):
    x, g = ns.promote(x, g)
    pads = []
    for size, k, s, d, lo, hi, n_out in zip(x.shape[2:], kernel_hw, stride, dilation,
                                            (padding[0], padding[2]), (padding[1], padding[3]),
                                            g.shape[2:]):
        unused = size + lo + hi - (d * (k - 1) + 1) - (n_out - 1) * s  # rows no window reads
        pads.append((lo, hi - unused))
    # the input's channels as the batch, its batch as the features; the
    # cotangent is the window (dilated by the stride), stepped by the dilation
    return ns.lax.conv_general_dilated(
        x, g, window_strides=dilation, padding=tuple(pads), rhs_dilation=stride,
        dimension_numbers=("CNHW", "IOHW", "CNHW"), batch_group_count=groups,
        precision=_highest(ns))


def _reduce_pads(shape, kernel, stride, padding, ceil_mode):
    oh, ow = _pool_geometry(shape, kernel, stride, padding, ceil_mode)
    t, b, l, r = _pool_extents(shape, kernel, stride, padding, oh, ow)
    return ((0, 0), (0, 0), (t, b), (l, r)), (oh, ow)


@lowers("xla", "max_pool2d")
def _max_pool2d(ns, x, kernel, stride, padding, ceil_mode):
    pads, _ = _reduce_pads(x.shape, kernel, stride, padding, ceil_mode)
    low = -np.inf if np.dtype(x.dtype).kind == "f" else np.iinfo(x.dtype).min
    return ns.lax.reduce_window(x, np.asarray(low, x.dtype), ns.lax.max, (1, 1) + tuple(kernel),
                                (1, 1) + tuple(stride), pads)


def _window(xp, di, dj, stride, oh, ow):
    sh, sw = stride
    return (slice(None), slice(None), slice(di, di + sh * (oh - 1) + 1, sh),
            slice(dj, dj + sw * (ow - 1) + 1, sw))


def _first_max_masks(ns, x, kernel, stride, padding, ceil_mode):
    """Per kernel offset, where that offset holds its window's first maximum;
    and the padded input's geometry."""
    jnp = ns.jnp
    pads, (oh, ow) = _reduce_pads(x.shape, kernel, stride, padding, ceil_mode)
    low = -np.inf if np.dtype(x.dtype).kind == "f" else np.iinfo(x.dtype).min
    xp = jnp.pad(x, pads, constant_values=np.asarray(low, x.dtype))
    best = _max_pool2d(ns, x, kernel, stride, padding, ceil_mode)
    free = jnp.ones(best.shape, bool)
    masks = []
    for _, _, di, dj in _taps(kernel, (1, 1)):
        hit = (xp[_window(xp, di, dj, stride, oh, ow)] == best) & free
        free = free & ~hit
        masks.append((di, dj, hit))
    return masks, pads, (oh, ow), xp.shape


@lowers("xla", "max_pool2d_grad")
def _max_pool2d_grad(ns, g, x, best, kernel, stride, padding, ceil_mode):
    jnp = ns.jnp
    masks, pads, (oh, ow), padded = _first_max_masks(ns, x, kernel, stride, padding, ceil_mode)
    gxp = jnp.zeros(padded, g.dtype)
    for di, dj, hit in masks:
        gxp = gxp.at[_window(gxp, di, dj, stride, oh, ow)].add(jnp.where(hit, g, 0))
    t, l = pads[2][0], pads[3][0]
    return gxp[:, :, t:t + x.shape[2], l:l + x.shape[3]]


@lowers("xla", "max_pool2d_pick")
def _max_pool2d_pick(ns, v, x, kernel, stride, padding, ceil_mode):
    jnp = ns.jnp
    masks, pads, (oh, ow), _ = _first_max_masks(ns, x, kernel, stride, padding, ceil_mode)
    vp = jnp.pad(v, pads)
    out = jnp.zeros(v.shape[:2] + (oh, ow), v.dtype)
    for di, dj, hit in masks:
        out = out + jnp.where(hit, vp[_window(vp, di, dj, stride, oh, ow)], 0)
    return out


@lowers("xla", "avg_pool2d")
def _avg_pool2d(ns, x, kernel, stride, padding, ceil_mode, exclusive):
    pads, _ = _reduce_pads(x.shape, kernel, stride, padding, ceil_mode)
    total = ns.lax.reduce_window(x, np.asarray(0, x.dtype), ns.lax.add, (1, 1) + tuple(kernel),
                                 (1, 1) + tuple(stride), pads)
    counts = avg_pool_counts(x.shape, kernel, stride, padding, ceil_mode, exclusive)
    return total / counts.astype(x.dtype)


@lowers("xla", "avg_pool2d_grad")
def _avg_pool2d_grad(ns, g, *like, input_hw, kernel, stride, padding, ceil_mode, exclusive):
    jnp = ns.jnp
    input_hw = given_hw(input_hw, like)
    shape = tuple(g.shape[:2]) + tuple(input_hw)
    pads, (oh, ow) = _reduce_pads(shape, kernel, stride, padding, ceil_mode)
    share = g / avg_pool_counts(shape, kernel, stride, padding, ceil_mode,
                                exclusive).astype(g.dtype)
    (t, b), (l, r) = pads[2], pads[3]
    gxp = jnp.zeros(shape[:2] + (input_hw[0] + t + b, input_hw[1] + l + r), g.dtype)
    for _, _, di, dj in _taps(kernel, (1, 1)):
        gxp = gxp.at[_window(gxp, di, dj, stride, oh, ow)].add(share)
    return gxp[:, :, t:t + input_hw[0], l:l + input_hw[1]]
