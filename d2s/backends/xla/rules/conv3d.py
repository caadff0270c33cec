"""XLA rules of the 3-D convolution and pooling ops (`d2s/core/ops/conv3d.py`),
the 2-D family's forms (`rules/conv.py`) over NCDHW: `conv_general_dilated`
for the convolution and both its gradients, `reduce_window` for pooling,
and one strided update per kernel offset for the pooling gradients."""
from __future__ import annotations

import numpy as np

from ....core.ops.conv import input_size
from ....core.ops.conv3d import _low, _out_shape, _taps, avg_pool3d_counts, pool_extents
from ....core.registry import lowers

_NCDHW = ("NCDHW", "OIDHW", "NCDHW")


def _highest(ns):
    return ns.lax.Precision.HIGHEST


def _pairs(padding):
    return tuple(zip(padding[0::2], padding[1::2]))


@lowers("xla", "conv3d")
def _conv3d(ns, x, w, stride, padding, dilation, groups):
    x, w = ns.promote(x, w)
    return ns.lax.conv_general_dilated(
        x, w, window_strides=stride, padding=_pairs(padding), rhs_dilation=dilation,
        dimension_numbers=_NCDHW, feature_group_count=groups, precision=_highest(ns))


@lowers("xla", "conv3d_grad_input")
def _conv3d_grad_input(ns, g, w, input_dhw, stride, padding, dilation, groups):
    g, w = ns.promote(g, w)
    o, cg = w.shape[:2]
    kernel = tuple(w.shape[2:])
    og = o // groups
    # (O, Cg, k...) -> (C, Og, k...) per group, flipped in space
    wt = w.reshape((groups, og, cg) + kernel).transpose(0, 2, 1, 3, 4, 5)
    wt = wt.reshape((groups * cg, og) + kernel)[:, :, ::-1, ::-1, ::-1]
    pads = []
    for size, k, s, d, (lo, hi), n_out in zip(input_dhw, kernel, stride, dilation,
                                              _pairs(padding), g.shape[2:]):
        size = input_size(size, n_out, k, s, d, lo, hi)
        pads.append((d * (k - 1) - lo, size - 1 - (n_out - 1) * s + lo))
    return ns.lax.conv_general_dilated(
        g, wt, window_strides=(1, 1, 1), padding=tuple(pads), lhs_dilation=stride,
        rhs_dilation=dilation, dimension_numbers=_NCDHW, feature_group_count=groups,
        precision=_highest(ns))


@lowers("xla", "conv3d_grad_filter")
def _conv3d_grad_filter(ns, x, g, kernel_dhw, stride, padding, dilation, groups):
    x, g = ns.promote(x, g)
    pads = []
    for size, k, s, d, (lo, hi), n_out in zip(x.shape[2:], kernel_dhw, stride, dilation,
                                              _pairs(padding), g.shape[2:]):
        unused = size + lo + hi - (d * (k - 1) + 1) - (n_out - 1) * s
        pads.append((lo, hi - unused))
    return ns.lax.conv_general_dilated(
        x, g, window_strides=dilation, padding=tuple(pads), rhs_dilation=stride,
        dimension_numbers=("CNDHW", "IODHW", "CNDHW"), batch_group_count=groups,
        precision=_highest(ns))


def _extents(spatial, kernel, stride, padding, ceil_mode):
    out = _out_shape(spatial, kernel, stride, padding, (1, 1, 1), ceil_mode)
    ext = pool_extents(spatial, kernel, stride, padding, out)
    return ((0, 0), (0, 0)) + _pairs(ext), out


def _window(off, stride, out):
    return (slice(None), slice(None)) + tuple(
        slice(o, o + s * (n - 1) + 1, s) for o, s, n in zip(off, stride, out))


def _unpad(ns, xp, pads, spatial):
    return xp[(slice(None), slice(None)) + tuple(
        slice(lo, lo + n) for (lo, _), n in zip(pads[2:], spatial))]


@lowers("xla", "max_pool3d")
def _max_pool3d(ns, x, kernel, stride, padding, ceil_mode):
    pads, _ = _extents(x.shape[2:], kernel, stride, padding, ceil_mode)
    return ns.lax.reduce_window(x, np.asarray(_low(np.dtype(x.dtype)), x.dtype), ns.lax.max,
                                (1, 1) + tuple(kernel), (1, 1) + tuple(stride), pads)


@lowers("xla", "max_pool3d_grad")
def _max_pool3d_grad(ns, g, x, best, kernel, stride, padding, ceil_mode):
    jnp = ns.jnp
    pads, out = _extents(x.shape[2:], kernel, stride, padding, ceil_mode)
    xp = jnp.pad(x, pads, constant_values=np.asarray(_low(np.dtype(x.dtype)), x.dtype))
    free = jnp.ones(best.shape, bool)
    gxp = jnp.zeros(xp.shape, g.dtype)
    for _, off in _taps(kernel, (1, 1, 1)):
        idx = _window(off, stride, out)
        hit = (xp[idx] == best) & free
        free = free & ~hit
        gxp = gxp.at[idx].add(jnp.where(hit, g, 0))
    return _unpad(ns, gxp, pads, x.shape[2:])


@lowers("xla", "avg_pool3d")
def _avg_pool3d(ns, x, kernel, stride, padding, ceil_mode, exclusive):
    pads, _ = _extents(x.shape[2:], kernel, stride, padding, ceil_mode)
    total = ns.lax.reduce_window(x, np.asarray(0, x.dtype), ns.lax.add, (1, 1) + tuple(kernel),
                                 (1, 1) + tuple(stride), pads)
    counts = avg_pool3d_counts(tuple(x.shape[2:]), kernel, stride, padding, ceil_mode,
                               exclusive)
    return total / counts.astype(x.dtype)


@lowers("xla", "avg_pool3d_grad")
def _avg_pool3d_grad(ns, g, input_dhw, kernel, stride, padding, ceil_mode, exclusive):
    jnp = ns.jnp
    pads, out = _extents(tuple(input_dhw), kernel, stride, padding, ceil_mode)
    share = g / avg_pool3d_counts(tuple(input_dhw), kernel, stride, padding, ceil_mode,
                                  exclusive).astype(g.dtype)
    gxp = jnp.zeros(tuple(g.shape[:2]) + tuple(n + lo + hi for n, (lo, hi) in
                                               zip(input_dhw, pads[2:])), g.dtype)
    for _, off in _taps(kernel, (1, 1, 1)):
        gxp = gxp.at[_window(off, stride, out)].add(share)
    return _unpad(ns, gxp, pads, input_dhw)
