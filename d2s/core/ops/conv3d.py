"""3-D convolution and pooling over NCDHW volumes, as ops with their own
kernels (the 2-D family's design, `conv.py`, one spatial dim more).

Attributes are normalized before binding: `stride`, `dilation`, `kernel`
are triples, `padding` is `(front, back, top, bottom, left, right)`. The
numpy kernels are written for any number of spatial dims: im2col with one
strided copy per kernel offset, then one batched matmul over the groups;
the two convolution gradients are ops whose vjps are the other two, so
every order of derivative is exact. Max pooling's gradient sends each
window's cotangent to its first maximum (row-major), as Paddle and PyTorch.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ._base import grad_discarded, lift
from .conv import conv_out_size, input_size

__all__ = ["conv3d", "conv3d_transpose_op", "max_pool3d", "avg_pool3d", "triple", "pads3d"]

ND = 3


def triple(v, where, name):
    """An int or a 3-sequence -> a triple of positive ints."""
    if isinstance(v, (int, np.integer)):
        out = (int(v),) * ND
    else:
        out = tuple(int(a) for a in v)
        if len(out) == 1:
            out = out * ND
    if len(out) != ND or min(out) <= 0:
        raise ValueError(f"{where}: {name} must be a positive int or 3 positive ints, got {v!r}")
    return out


def pads3d(padding, in_dhw, kernel, stride, dilation, where, channel_last=False):
    """Paddle's `padding` forms -> (front, back, top, bottom, left, right): an int,
    3 ints, 6 ints, 5 (or 3) per-dim pairs, 'SAME' or 'VALID'."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return (0,) * (2 * ND)
        if mode != "SAME":
            raise ValueError(f"{where}: padding must be 'SAME', 'VALID', an int or a list, "
                             f"got {padding!r}")
        pads = []
        for size, k, s, d in zip(in_dhw, kernel, stride, dilation):
            if size is None:
                raise ValueError(f"{where}: padding='SAME' needs the spatial dims known")
            total = max((-(-size // s) - 1) * s + d * (k - 1) + 1 - size, 0)
            pads += [total // 2, total - total // 2]
        return tuple(pads)
    if isinstance(padding, (int, np.integer)):
        return (int(padding),) * (2 * ND)
    flat = list(padding)
    if flat and all(isinstance(v, (list, tuple)) for v in flat):
        if len(flat) == ND + 2:
            rest = [flat[0], flat[-1]] if channel_last else flat[:2]
            if any(int(v) for p in rest for v in p):
                raise ValueError(f"{where}: padding of the batch or channel dim is not "
                                 f"supported, got {padding!r}")
            flat = flat[1:-1] if channel_last else flat[2:]
        if len(flat) != ND or any(len(p) != 2 for p in flat):
            raise ValueError(f"{where}: padding pairs must be given for 3 (or 5) dims, "
                             f"got {padding!r}")
        return tuple(int(v) for p in flat for v in p)
    if len(flat) == ND:
        return tuple(int(v) for v in flat for _ in range(2))
    if len(flat) == 2 * ND:
        return tuple(int(v) for v in flat)
    raise ValueError(f"{where}: padding must be an int, 3 or 6 ints, pairs, 'SAME' or "
                     f"'VALID', got {padding!r}")


def _lohi(padding):
    return padding[0::2], padding[1::2]


def _check_volume(x, where):
    if len(x.shape) != ND + 2:
        raise ValueError(f"{where}: expects a 5-D NCDHW input, got shape {list(x.shape)}")


# ---- numpy helpers (any number of spatial dims) ---------------------------------------------
def _pad(x, padding, value=0.0):
    if not any(padding):
        return x
    lo, hi = _lohi(padding)
    return np.pad(x, [(0, 0), (0, 0)] + list(zip(lo, hi)), constant_values=value)


def _unpad(xp, padding, spatial):
    if not any(padding):
        return xp
    lo, _ = _lohi(padding)
    idx = (slice(None), slice(None)) + tuple(slice(a, a + n) for a, n in zip(lo, spatial))
    return np.ascontiguousarray(xp[idx])


def _taps(kernel, dilation):
    """(kernel index, offset) per kernel tap, row-major."""
    return [(idx, tuple(i * d for i, d in zip(idx, dilation)))
            for idx in itertools.product(*(range(k) for k in kernel))]


def _window(offset, stride, out):
    """The index of the strided view of a padded input at one kernel offset."""
    return (slice(None), slice(None)) + tuple(
        slice(o, o + s * (n - 1) + 1, s) for o, s, n in zip(offset, stride, out))


def _out_shape(spatial, kernel, stride, padding, dilation, ceil_mode=False):
    lo, hi = _lohi(padding)
    return tuple(conv_out_size(n, k, s, a, b, d, ceil_mode)
                 for n, k, s, a, b, d in zip(spatial, kernel, stride, lo, hi, dilation))


def _im2col(xp, kernel, stride, dilation, out, groups):
    n, c = xp.shape[:2]
    cols = np.empty((n, c) + tuple(kernel) + tuple(out), xp.dtype)
    for idx, off in _taps(kernel, dilation):
        cols[(slice(None), slice(None)) + idx] = xp[_window(off, stride, out)]
    return cols.reshape(n, groups, (c // groups) * int(np.prod(kernel)), int(np.prod(out)))


def _attrs(stride, padding, dilation, groups):
    return dict(stride=stride, padding=padding, dilation=dilation, groups=groups)


def _spatial(t, where, stride=None):
    shape = tuple(t.shape[2:])
    if None in shape and (stride is None or any(n is None and s != 1
                                                for n, s in zip(shape, stride))):
        raise ValueError(f"{where}: the gradient needs the spatial dims of an input with "
                         f"stride {list(stride or ())} known, got {shape}: give them in the "
                         "input_spec")
    return shape


# ---- conv3d ---------------------------------------------------------------------------------
def _conv3d_kernel(x, w, stride, padding, dilation, groups):
    dtype = np.result_type(x.dtype, w.dtype)
    n, o = x.shape[0], w.shape[0]
    out = _out_shape(x.shape[2:], w.shape[2:], stride, padding, dilation)
    cols = _im2col(_pad(x.astype(dtype, copy=False), padding), w.shape[2:], stride, dilation,
                   out, groups)
    wg = w.astype(dtype, copy=False).reshape(groups, o // groups, -1)
    y = np.matmul(wg, cols).reshape((n, o) + out)
    return y if y.dtype == dtype else y.astype(dtype)  # bfloat16 products come as float32


def _conv3d_infer(x, w, stride, padding, dilation, groups):
    _check_volume(x, "conv3d")
    if len(w.shape) != ND + 2:
        raise ValueError(f"conv3d: the weight must be 5-D (out, in/groups, kd, kh, kw), got "
                         f"{list(w.shape)}")
    c, o = x.shape[1], w.shape[0]
    if o is not None and o % groups:
        raise ValueError(f"conv3d: out_channels {o} is not divisible by groups {groups}")
    if c is not None and w.shape[1] is not None and c != w.shape[1] * groups:
        raise ValueError(f"conv3d: the input has {c} channels but the weight {list(w.shape)} "
                         f"with groups={groups} expects {w.shape[1] * groups}")
    out = _out_shape(x.shape[2:], w.shape[2:], stride, padding, dilation)
    if 0 in out:
        raise ValueError(f"conv3d: the kernel {list(w.shape[2:])} (dilation {list(dilation)}) "
                         f"is larger than the padded input {list(x.shape[2:])}")
    return Aval((x.shape[0], o) + out, np.result_type(np.dtype(x.dtype), np.dtype(w.dtype)))


def _conv3d_vjp(g, out, x, w, stride, padding, dilation, groups):
    attrs = _attrs(stride, padding, dilation, groups)
    gx = gw = None
    if not grad_discarded(x):
        gx = bind("conv3d_grad_input", g, w, input_dhw=_spatial(x, "conv3d", stride), **attrs)
    if not grad_discarded(w):
        gw = bind("conv3d_grad_filter", x, g, kernel_dhw=tuple(w.shape[2:]), **attrs)
    return gx, gw


register_op("conv3d", _conv3d_kernel, _conv3d_infer, _conv3d_vjp, fresh=True)


def _input_dims(input_dhw, out, kernel, stride, dilation, padding):
    lo, hi = _lohi(padding)
    return tuple(input_size(n, m, k, s, d, a, b) for n, m, k, s, d, a, b in
                 zip(input_dhw, out, kernel, stride, dilation, lo, hi))


def _conv3d_grad_input_kernel(g, w, input_dhw, stride, padding, dilation, groups):
    """The input's cotangent (a transposed convolution): col2im of `w^T @ g`."""
    dtype = np.result_type(g.dtype, w.dtype)
    n, o = g.shape[:2]
    out = tuple(g.shape[2:])
    kernel = tuple(w.shape[2:])
    cg = w.shape[1]
    c = cg * groups
    gg = g.astype(dtype, copy=False).reshape(n, groups, o // groups, int(np.prod(out)))
    wt = w.astype(dtype, copy=False).reshape(groups, o // groups, -1)
    dcols = np.matmul(wt.transpose(0, 2, 1), gg)
    if dcols.dtype != dtype:
        dcols = dcols.astype(dtype)
    dcols = dcols.reshape((n, c) + kernel + out)
    spatial = _input_dims(input_dhw, out, kernel, stride, dilation, padding)
    lo, hi = _lohi(padding)
    gxp = np.zeros((n, c) + tuple(s + a + b for s, a, b in zip(spatial, lo, hi)), dtype)
    for idx, off in _taps(kernel, dilation):
        win = gxp[_window(off, stride, out)]
        np.add(win, dcols[(slice(None), slice(None)) + idx], out=win)
    return _unpad(gxp, padding, spatial)


def _conv3d_grad_input_infer(g, w, input_dhw, stride, padding, dilation, groups):
    spatial = tuple(input_dhw)
    if None in spatial and None not in tuple(g.shape[2:]) and None not in tuple(w.shape[2:]):
        spatial = _input_dims(input_dhw, tuple(g.shape[2:]), tuple(w.shape[2:]), stride,
                              dilation, padding)
    return Aval((g.shape[0], None if w.shape[1] is None else w.shape[1] * groups) + spatial,
                np.result_type(np.dtype(g.dtype), np.dtype(w.dtype)))


def _conv3d_grad_input_vjp(gg, out, g, w, input_dhw, stride, padding, dilation, groups):
    # out = A_w^T g, linear in g and in w: <gg, A_w^T g> = <conv(gg, w), g>
    attrs = _attrs(stride, padding, dilation, groups)
    return (bind("conv3d", gg, w, **attrs),
            bind("conv3d_grad_filter", gg, g, kernel_dhw=tuple(w.shape[2:]), **attrs))


register_op("conv3d_grad_input", _conv3d_grad_input_kernel, _conv3d_grad_input_infer,
            _conv3d_grad_input_vjp, fresh=True)


def _conv3d_grad_filter_kernel(x, g, kernel_dhw, stride, padding, dilation, groups):
    dtype = np.result_type(x.dtype, g.dtype)
    n, o = g.shape[:2]
    out = tuple(g.shape[2:])
    cols = _im2col(_pad(x.astype(dtype, copy=False), padding), kernel_dhw, stride, dilation,
                   out, groups)
    gg = g.astype(dtype, copy=False).reshape(n, groups, o // groups, int(np.prod(out)))
    dw = np.add.reduce(np.matmul(gg, cols.transpose(0, 1, 3, 2)), axis=0)
    return dw.astype(dtype, copy=False).reshape((o, x.shape[1] // groups) + tuple(kernel_dhw))


def _conv3d_grad_filter_infer(x, g, kernel_dhw, stride, padding, dilation, groups):
    return Aval((g.shape[1], None if x.shape[1] is None else x.shape[1] // groups)
                + tuple(kernel_dhw), np.result_type(np.dtype(x.dtype), np.dtype(g.dtype)))


def _conv3d_grad_filter_vjp(gw, out, x, g, kernel_dhw, stride, padding, dilation, groups):
    # out = B_x^T g, linear in x and in g: <gw, B_x^T g> = <conv(x, gw), g>
    attrs = _attrs(stride, padding, dilation, groups)
    return (bind("conv3d_grad_input", g, gw, input_dhw=_spatial(x, "conv3d"), **attrs),
            bind("conv3d", x, gw, **attrs))


register_op("conv3d_grad_filter", _conv3d_grad_filter_kernel, _conv3d_grad_filter_infer,
            _conv3d_grad_filter_vjp, fresh=True)


def conv3d(x, weight, stride=(1,) * ND, padding=(0,) * (2 * ND), dilation=(1,) * ND, groups=1):
    """NCDHW convolution (cross-correlation) with normalized attributes."""
    x, weight = lift(x), lift(weight)
    attrs = dict(stride=tuple(stride), padding=tuple(padding), dilation=tuple(dilation),
                 groups=int(groups))
    _conv3d_infer(x, weight, **attrs)
    return bind("conv3d", x, weight, **attrs)


def conv3d_transpose_op(x, weight, output_dhw, stride, padding, dilation, groups):
    """The transposed convolution: the input gradient of the convolution that
    maps an `output_dhw` volume to `x`'s (the weight is (C_in, C_out/groups, k...))."""
    x, weight = lift(x), lift(weight)
    if len(x.shape) != ND + 2 or len(weight.shape) != ND + 2:
        raise ValueError(f"conv3d_transpose: expects a 5-D input and weight, got "
                         f"{list(x.shape)} and {list(weight.shape)}")
    if x.shape[1] is not None and weight.shape[0] is not None and x.shape[1] != weight.shape[0]:
        raise ValueError(f"conv3d_transpose: the input has {x.shape[1]} channels but the "
                         f"weight {list(weight.shape)} expects {weight.shape[0]}")
    return bind("conv3d_grad_input", x, weight, input_dhw=tuple(output_dhw),
                **_attrs(tuple(stride), tuple(padding), tuple(dilation), int(groups)))


# ---- pooling --------------------------------------------------------------------------------
def pool_extents(spatial, kernel, stride, padding, out):
    """`padding` with the high sides grown to what ceil mode's last windows reach."""
    lo, hi = _lohi(padding)
    pads = []
    for n, k, s, a, b, m in zip(spatial, kernel, stride, lo, hi, out):
        pads += [a, b + max((m - 1) * s + k - (n + a + b), 0)]
    return tuple(pads)


def _pool_infer(x, kernel, stride, padding, ceil_mode, **_):
    _check_volume(x, "pool3d")
    lo, hi = _lohi(padding)
    for k, a, b in zip(kernel, lo, hi):
        if max(a, b) > k:
            raise ValueError(f"pool3d: padding {list(padding)} exceeds the kernel "
                             f"{list(kernel)}")
    out = _out_shape(x.shape[2:], kernel, stride, padding, (1,) * ND, ceil_mode)
    if 0 in out:
        raise ValueError(f"pool3d: the kernel {list(kernel)} is larger than the padded input "
                         f"{list(x.shape[2:])}")
    return Aval(tuple(x.shape[:2]) + out, x.dtype)


def _low(dtype):
    return -np.inf if dtype.kind == "f" or dtype.name == "bfloat16" else np.iinfo(dtype).min


def _max_pool3d_kernel(x, kernel, stride, padding, ceil_mode):
    out = _out_shape(x.shape[2:], kernel, stride, padding, (1,) * ND, ceil_mode)
    xp = _pad(x, pool_extents(x.shape[2:], kernel, stride, padding, out), _low(x.dtype))
    best = None
    for _, off in _taps(kernel, (1,) * ND):
        win = xp[_window(off, stride, out)]
        best = win.copy() if best is None else np.maximum(best, win, out=best)
    return best


def _max_pool3d_vjp(g, out, x, kernel, stride, padding, ceil_mode):
    return (bind("max_pool3d_grad", g, x, out, kernel=kernel, stride=stride, padding=padding,
                 ceil_mode=ceil_mode),)


register_op("max_pool3d", _max_pool3d_kernel, _pool_infer, _max_pool3d_vjp, fresh=True)


def _max_pool3d_grad_kernel(g, x, best, kernel, stride, padding, ceil_mode):
    out = tuple(g.shape[2:])
    ext = pool_extents(x.shape[2:], kernel, stride, padding, out)
    xp = _pad(x, ext, _low(x.dtype))
    free = np.ones(best.shape, bool)
    gxp = np.zeros(xp.shape, g.dtype)
    for _, off in _taps(kernel, (1,) * ND):
        idx = _window(off, stride, out)
        hit = (xp[idx] == best) & free
        free &= ~hit
        win = gxp[idx]
        np.add(win, g, out=win, where=hit)
    return _unpad(gxp, ext, x.shape[2:])


register_op("max_pool3d_grad", _max_pool3d_grad_kernel,
            lambda g, x, best, **_: Aval(tuple(x.shape), g.dtype), None, fresh=True)


def avg_pool3d_counts(spatial, kernel, stride, padding, ceil_mode, exclusive):
    """The divisor per output position: the window's elements inside the input
    (exclusive) or inside the padded input (ceil mode's overhang never counts)."""
    out = _out_shape(spatial, kernel, stride, padding, (1,) * ND, ceil_mode)
    lo, hi = _lohi(padding)
    total = np.ones((), np.int64)
    for n, k, s, a, b, m in zip(spatial, kernel, stride, lo, hi, out):
        start = np.arange(m) * s - a
        stop = start + k
        c = (np.minimum(stop, n) - np.maximum(start, 0)) if exclusive else (
            np.minimum(stop, n + b) - start)
        total = np.multiply.outer(total, c)
    return total


def _avg_pool3d_kernel(x, kernel, stride, padding, ceil_mode, exclusive):
    out = _out_shape(x.shape[2:], kernel, stride, padding, (1,) * ND, ceil_mode)
    xp = _pad(x, pool_extents(x.shape[2:], kernel, stride, padding, out))
    acc = None
    for _, off in _taps(kernel, (1,) * ND):
        win = xp[_window(off, stride, out)]
        acc = win.copy() if acc is None else np.add(acc, win, out=acc)
    counts = avg_pool3d_counts(x.shape[2:], kernel, stride, padding, ceil_mode, exclusive)
    return np.divide(acc, counts.astype(x.dtype), out=acc)


def _avg_pool3d_vjp(g, out, x, kernel, stride, padding, ceil_mode, exclusive):
    return (bind("avg_pool3d_grad", g, input_dhw=_spatial(x, "avg_pool3d"), kernel=kernel,
                 stride=stride, padding=padding, ceil_mode=ceil_mode, exclusive=exclusive),)


register_op("avg_pool3d", _avg_pool3d_kernel, _pool_infer, _avg_pool3d_vjp, fresh=True)


def _avg_pool3d_grad_kernel(g, input_dhw, kernel, stride, padding, ceil_mode, exclusive):
    out = tuple(g.shape[2:])
    ext = pool_extents(input_dhw, kernel, stride, padding, out)
    share = g / avg_pool3d_counts(input_dhw, kernel, stride, padding, ceil_mode,
                                  exclusive).astype(g.dtype)
    lo, hi = _lohi(ext)
    gxp = np.zeros(tuple(g.shape[:2]) + tuple(n + a + b for n, a, b in zip(input_dhw, lo, hi)),
                   g.dtype)
    for _, off in _taps(kernel, (1,) * ND):
        win = gxp[_window(off, stride, out)]
        np.add(win, share, out=win)
    return _unpad(gxp, ext, input_dhw)


def _avg_pool3d_grad_vjp(gg, out, g, input_dhw, kernel, stride, padding, ceil_mode, exclusive):
    return (bind("avg_pool3d", gg, kernel=kernel, stride=stride, padding=padding,
                 ceil_mode=ceil_mode, exclusive=exclusive),)


register_op("avg_pool3d_grad", _avg_pool3d_grad_kernel,
            lambda g, input_dhw, **_: Aval(tuple(g.shape[:2]) + tuple(input_dhw), g.dtype),
            _avg_pool3d_grad_vjp, fresh=True)


def max_pool3d(x, kernel, stride, padding, ceil_mode=False):
    x = lift(x)
    attrs = dict(kernel=tuple(kernel), stride=tuple(stride), padding=tuple(padding),
                 ceil_mode=bool(ceil_mode))
    _pool_infer(x, **attrs)
    return bind("max_pool3d", x, **attrs)


def avg_pool3d(x, kernel, stride, padding, ceil_mode=False, exclusive=True):
    x = lift(x)
    attrs = dict(kernel=tuple(kernel), stride=tuple(stride), padding=tuple(padding),
                 ceil_mode=bool(ceil_mode))
    _pool_infer(x, **attrs)
    return bind("avg_pool3d", x, exclusive=bool(exclusive), **attrs)
