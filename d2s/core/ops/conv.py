"""Convolution and pooling over NCHW images, as ops with their own kernels.

They are ops (not compositions) because a composition of slices would make a
program with one op per kernel offset, and because every backend has a native
form (XLA's `conv_general_dilated` / `reduce_window`, ONNX's `Conv` /
`MaxPool` / `AveragePool`).

Attributes are normalized before binding (see `conv_pads`): `stride`,
`dilation` and `kernel` are pairs, `padding` is `(top, bottom, left, right)`.
The channel-last layout, the `'SAME'` / `'VALID'` strings and bias live in
`d2s.nn.functional`, which transposes and adds around these ops.

Numpy kernels: im2col with one strided copy per kernel offset (never a loop
over pixels), then one batched matmul over the groups. The gradients are
ops too (`conv2d_grad_input`, `conv2d_grad_filter`, `*_pool2d_grad`); the
convolution gradients are bilinear, so their own vjps are the other two
convolution ops and every order of derivative is exact.
"""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ._base import grad_discarded, lift

__all__ = ["conv2d", "max_pool2d", "avg_pool2d", "conv_out_size", "conv_pads"]


# ---- shapes -------------------------------------------------------------------------------
def conv_out_size(size, k, stride, lo, hi, dilation=1, ceil_mode=False):
    """Output length of a window of `k` taps (dilated) sliding over `size` padded
    by `lo` / `hi`; None when `size` is unknown."""
    if size is None or k is None:
        return None
    span = size + lo + hi - (dilation * (k - 1) + 1)
    if span < 0:
        return 0
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    # ceil mode's last window must start inside the input or its leading padding
    # (as PyTorch and ONNX Runtime have it): never a window over padding alone
    return out - 1 if (out - 1) * stride >= size + lo else out


def conv_pads(padding, in_hw, kernel, stride, dilation, where, channel_last=False):
    """Paddle's `padding` forms -> (top, bottom, left, right): an int, a pair, four
    ints, per-dim pairs (2 or 4 dims: the batch and channel pairs must be 0),
    or the strings 'SAME' / 'VALID'."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return (0, 0, 0, 0)
        if mode != "SAME":
            raise ValueError(f"{where}: padding must be 'SAME', 'VALID', an int or a list, "
                             f"got {padding!r}")
        pads = []
        for size, k, s, d in zip(in_hw, kernel, stride, dilation):
            if size is None:
                raise ValueError(f"{where}: padding='SAME' needs the spatial dims known "
                                 f"(input spatial shape {tuple(in_hw)})")
            out = -(-size // s)
            total = max((out - 1) * s + d * (k - 1) + 1 - size, 0)
            pads += [total // 2, total - total // 2]
        return tuple(pads)
    if isinstance(padding, (int, np.integer)):
        p = int(padding)
        return (p, p, p, p)
    flat = list(padding)
    if flat and all(isinstance(v, (list, tuple)) for v in flat):
        if len(flat) == 4:
            # [[0,0],[0,0],[t,b],[l,r]] (NCHW) or [[0,0],[t,b],[l,r],[0,0]] (NHWC)
            rest = [flat[0], flat[3]] if channel_last else flat[:2]
            if any(int(v) for p in rest for v in p):
                raise ValueError(f"{where}: padding of the batch or channel dim is not "
                                 f"supported, got {padding!r}")
            flat = flat[1:3] if channel_last else flat[2:]
        if len(flat) != 2 or any(len(p) != 2 for p in flat):
            raise ValueError(f"{where}: padding pairs must be given for 2 (or 4) dims, "
                             f"got {padding!r}")
        return tuple(int(v) for p in flat for v in p)
    if len(flat) == 2:
        return (int(flat[0]), int(flat[0]), int(flat[1]), int(flat[1]))
    if len(flat) == 4:
        return tuple(int(v) for v in flat)
    raise ValueError(f"{where}: padding must be an int, 2 or 4 ints, pairs, 'SAME' or "
                     f"'VALID', got {padding!r}")


def pair(v, where, name):
    """An int or a 2-sequence -> a pair of positive ints."""
    if isinstance(v, (int, np.integer)):
        out = (int(v), int(v))
    else:
        out = tuple(int(a) for a in v)
        if len(out) == 1:
            out = out * 2
    if len(out) != 2 or min(out) <= 0:
        raise ValueError(f"{where}: {name} must be a positive int or 2 positive ints, got {v!r}")
    return out


def _check_image(x, where):
    if len(x.shape) != 4:
        raise ValueError(f"{where}: expects a 4-D NCHW input, got shape {list(x.shape)}")


# ---- numpy helpers ----------------------------------------------------------------------------
def _pad(x, padding, value=0.0):
    t, b, l, r = padding
    if not (t or b or l or r):
        return x
    n, c, h, w = x.shape
    out = np.full((n, c, h + t + b, w + l + r), value, x.dtype) if value else \
        np.zeros((n, c, h + t + b, w + l + r), x.dtype)
    out[:, :, t:t + h, l:l + w] = x
    return out


def _taps(kernel, dilation):
    kh, kw = kernel
    dh, dw = dilation
    return [(i, j, i * dh, j * dw) for i in range(kh) for j in range(kw)]


def _window(xp, di, dj, stride, oh, ow):
    """The (N, C, oh, ow) strided view of the padded input at one kernel offset."""
    sh, sw = stride
    return xp[:, :, di:di + sh * (oh - 1) + 1:sh, dj:dj + sw * (ow - 1) + 1:sw]


def _im2col(xp, kernel, stride, dilation, oh, ow, groups):
    """(N, G, C/G * kh * kw, oh * ow), batch-major: one strided copy per kernel
    offset, and the products below need no transposed copies (their results
    are NCHW as they come)."""
    n, c = xp.shape[:2]
    kh, kw = kernel
    cols = np.empty((n, c, kh, kw, oh, ow), xp.dtype)
    for i, j, di, dj in _taps(kernel, dilation):
        cols[:, :, i, j] = _window(xp, di, dj, stride, oh, ow)
    return cols.reshape(n, groups, (c // groups) * kh * kw, oh * ow)


def _conv_geometry(x_shape, w_shape, stride, padding, dilation):
    oh = conv_out_size(x_shape[2], w_shape[2], stride[0], padding[0], padding[1], dilation[0])
    ow = conv_out_size(x_shape[3], w_shape[3], stride[1], padding[2], padding[3], dilation[1])
    return oh, ow


# ---- conv2d ---------------------------------------------------------------------------------
def _conv2d_kernel(x, w, stride, padding, dilation, groups):
    dtype = np.result_type(x.dtype, w.dtype)
    n = x.shape[0]
    o = w.shape[0]
    oh, ow = _conv_geometry(x.shape, w.shape, stride, padding, dilation)
    cols = _im2col(_pad(x.astype(dtype, copy=False), padding), w.shape[2:], stride, dilation,
                   oh, ow, groups)
    wg = w.astype(dtype, copy=False).reshape(groups, o // groups, -1)
    out = np.matmul(wg, cols).reshape(n, o, oh, ow)  # (N, G, O/G, P): NCHW already
    return out if out.dtype == dtype else out.astype(dtype)  # bfloat16 products are float32


def _conv2d_infer(x, w, stride, padding, dilation, groups):
    _check_image(x, "conv2d")
    if len(w.shape) != 4:
        raise ValueError(f"conv2d: the weight must be 4-D (out, in/groups, kh, kw), got "
                         f"{list(w.shape)}")
    c, o = x.shape[1], w.shape[0]
    if o is not None and o % groups:
        raise ValueError(f"conv2d: out_channels {o} is not divisible by groups {groups}")
    if c is not None and w.shape[1] is not None and c != w.shape[1] * groups:
        raise ValueError(f"conv2d: the input has {c} channels but the weight {list(w.shape)} "
                         f"with groups={groups} expects {w.shape[1] * groups}")
    oh, ow = _conv_geometry(x.shape, w.shape, stride, padding, dilation)
    if oh == 0 or ow == 0:
        raise ValueError(f"conv2d: the kernel {list(w.shape[2:])} (dilation {list(dilation)}) "
                         f"is larger than the padded input {list(x.shape[2:])}")
    return Aval((x.shape[0], o, oh, ow), np.result_type(np.dtype(x.dtype), np.dtype(w.dtype)))


def _conv_attrs(stride, padding, dilation, groups):
    return dict(stride=stride, padding=padding, dilation=dilation, groups=groups)


def _grad_size(t):
    """How a gradient op learns the spatial dims of the forward input `t`:
    `(input_hw, like)`. Dims known when the program is built are attributes;
    where one is unknown, `t` itself is passed along (`like`, a tuple of 0 or
    1 inputs) and the gradient op reads its dims when it runs. (With a stride
    above 1 the output's size does not fix the input's: rows that no window
    reads may trail it.)"""
    hw = tuple(t.shape[2:])
    return hw, ((t,) if None in hw else ())


def input_size(size, n_out, k, s, d, lo, hi, extra=0):
    """An input dim for its gradient: `size`, or where it was not given, the
    smallest one whose windows make `n_out` outputs, plus `extra` trailing
    rows no window reads (a transposed convolution's `output_padding`)."""
    if size is not None:
        return size
    if n_out is None:
        return None
    return (n_out - 1) * s + d * (k - 1) + 1 - lo - hi + extra


def grad_input_hw(input_hw, like, g_hw, kernel_hw, stride, dilation, padding, output_padding):
    """The spatial dims of `conv2d_grad_input`'s result: each given in
    `input_hw`, else the `like` input's (the forward input, read when the op
    runs), else derived from the cotangent's dims `g_hw` (a transposed
    convolution over dims unknown when built). None where still unknown (in a
    shape rule)."""
    t, b, l, r = padding
    out = []
    for i, (size, n_out, k, s, d, lo, hi, e) in enumerate(zip(
            input_hw, g_hw, kernel_hw, stride, dilation, (t, l), (b, r), output_padding)):
        if size is None and like:
            size = like[0].shape[2 + i]
            if size is None:
                out.append(None)
                continue
        out.append(input_size(size, n_out, k, s, d, lo, hi, e))
    return tuple(out)


def _conv2d_vjp(g, out, x, w, stride, padding, dilation, groups):
    attrs = _conv_attrs(stride, padding, dilation, groups)
    gx = gw = None
    if not grad_discarded(x):
        hw, like = _grad_size(x)
        gx = bind("conv2d_grad_input", g, w, *like, input_hw=hw, **attrs)
    if not grad_discarded(w):
        gw = bind("conv2d_grad_filter", x, g, kernel_hw=tuple(w.shape[2:]), **attrs)
    return gx, gw


register_op("conv2d", _conv2d_kernel, _conv2d_infer, _conv2d_vjp, fresh=True)


def _conv2d_grad_input_kernel(g, w, *like, input_hw, stride, padding, dilation, groups,
                              output_padding=(0, 0)):
    """The input's cotangent: col2im of `w^T @ g` (one strided add per offset).
    Its spatial dims: see `grad_input_hw` (`like` is the forward input, given
    where they were unknown when the program was built)."""
    dtype = np.result_type(g.dtype, w.dtype)
    n, o, oh, ow = g.shape
    cg, kh, kw = w.shape[1:]
    c = cg * groups
    gg = g.astype(dtype, copy=False).reshape(n, groups, o // groups, oh * ow)
    wt = w.astype(dtype, copy=False).reshape(groups, o // groups, cg * kh * kw)
    dcols = np.matmul(wt.transpose(0, 2, 1), gg).reshape(n, c, kh, kw, oh, ow)
    t, b, l, r = padding
    h, wd = grad_input_hw(input_hw, like, (oh, ow), (kh, kw), stride, dilation, padding,
                          output_padding)
    gxp = np.zeros((n, c, h + t + b, wd + l + r), dtype)
    for i, j, di, dj in _taps((kh, kw), dilation):
        win = _window(gxp, di, dj, stride, oh, ow)
        np.add(win, dcols[:, :, i, j], out=win)
    if not (t or b or l or r):
        return gxp
    return np.ascontiguousarray(gxp[:, :, t:t + h, l:l + wd])


def _conv2d_grad_input_infer(g, w, *like, input_hw, stride, padding, dilation, groups,
                             output_padding=(0, 0)):
    hw = grad_input_hw(input_hw, like, tuple(g.shape[2:]), tuple(w.shape[2:]), stride,
                       dilation, padding, output_padding)
    return Aval((g.shape[0], None if w.shape[1] is None else w.shape[1] * groups) + hw,
                np.result_type(np.dtype(g.dtype), np.dtype(w.dtype)))


def _conv2d_grad_input_vjp(gg, out, g, w, *like, input_hw, stride, padding, dilation, groups,
                           output_padding=(0, 0)):
    # out = A_w^T g is linear in g and in w: <gg, A_w^T g> = <conv(gg, w), g>.
    attrs = _conv_attrs(stride, padding, dilation, groups)
    d_g = bind("conv2d", gg, w, **attrs)
    d_w = bind("conv2d_grad_filter", gg, g, kernel_hw=tuple(w.shape[2:]), **attrs)
    return (d_g, d_w) + (None,) * len(like)


register_op("conv2d_grad_input", _conv2d_grad_input_kernel, _conv2d_grad_input_infer,
            _conv2d_grad_input_vjp, fresh=True)


def _conv2d_grad_filter_kernel(x, g, kernel_hw, stride, padding, dilation, groups):
    dtype = np.result_type(x.dtype, g.dtype)
    n, o, oh, ow = g.shape
    cols = _im2col(_pad(x.astype(dtype, copy=False), padding), kernel_hw, stride, dilation,
                   oh, ow, groups)
    gg = g.astype(dtype, copy=False).reshape(n, groups, o // groups, oh * ow)
    dw = np.add.reduce(np.matmul(gg, cols.transpose(0, 1, 3, 2)), axis=0)  # per sample, summed
    return dw.reshape((o, x.shape[1] // groups) + tuple(kernel_hw))


def _conv2d_grad_filter_infer(x, g, kernel_hw, stride, padding, dilation, groups):
    return Aval((g.shape[1], None if x.shape[1] is None else x.shape[1] // groups)
                + tuple(kernel_hw), np.result_type(np.dtype(x.dtype), np.dtype(g.dtype)))


def _conv2d_grad_filter_vjp(gw, out, x, g, kernel_hw, stride, padding, dilation, groups):
    # out = B_x^T g, linear in x and in g: <gw, B_x^T g> = <conv(x, gw), g>.
    attrs = _conv_attrs(stride, padding, dilation, groups)
    hw, like = _grad_size(x)
    d_x = bind("conv2d_grad_input", g, gw, *like, input_hw=hw, **attrs)
    d_g = bind("conv2d", x, gw, **attrs)
    return d_x, d_g


register_op("conv2d_grad_filter", _conv2d_grad_filter_kernel, _conv2d_grad_filter_infer,
            _conv2d_grad_filter_vjp, fresh=True)


def conv2d(x, weight, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """NCHW convolution (cross-correlation) with normalized attributes."""
    x, weight = lift(x), lift(weight)
    attrs = dict(stride=tuple(stride), padding=tuple(padding), dilation=tuple(dilation),
                 groups=int(groups))
    _conv2d_infer(x, weight, **attrs)  # eager calls check their shapes too
    return bind("conv2d", x, weight, **attrs)


# ---- pooling --------------------------------------------------------------------------------
def _pool_geometry(shape, kernel, stride, padding, ceil_mode):
    oh = conv_out_size(shape[2], kernel[0], stride[0], padding[0], padding[1], 1, ceil_mode)
    ow = conv_out_size(shape[3], kernel[1], stride[1], padding[2], padding[3], 1, ceil_mode)
    return oh, ow


def _pool_extents(shape, kernel, stride, padding, oh, ow):
    """Padding on the bottom / right beyond `padding` that ceil mode's last windows
    reach (they read nothing there)."""
    eh = max((oh - 1) * stride[0] + kernel[0] - (shape[2] + padding[0] + padding[1]), 0)
    ew = max((ow - 1) * stride[1] + kernel[1] - (shape[3] + padding[2] + padding[3]), 0)
    t, b, l, r = padding
    return (t, b + eh, l, r + ew)


def _pool_infer(x, kernel, stride, padding, ceil_mode, **_):
    _check_image(x, "pool2d")
    for k, p in zip(kernel, (padding[:2], padding[2:])):
        if max(p) > k:
            raise ValueError(f"pool2d: padding {list(padding)} exceeds the kernel "
                             f"{list(kernel)}")
    oh, ow = _pool_geometry(x.shape, kernel, stride, padding, ceil_mode)
    if oh == 0 or ow == 0:
        raise ValueError(f"pool2d: the kernel {list(kernel)} is larger than the padded input "
                         f"{list(x.shape[2:])}")
    return Aval((x.shape[0], x.shape[1], oh, ow), x.dtype)


def _max_pool_kernel(x, kernel, stride, padding, ceil_mode):
    oh, ow = _pool_geometry(x.shape, kernel, stride, padding, ceil_mode)
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _pad(x, _pool_extents(x.shape, kernel, stride, padding, oh, ow), low)
    out = None
    for _, _, di, dj in _taps(kernel, (1, 1)):
        win = _window(xp, di, dj, stride, oh, ow)
        out = win.copy() if out is None else np.maximum(out, win, out=out)
    return out


def _max_pool_vjp(g, out, x, kernel, stride, padding, ceil_mode):
    return (bind("max_pool2d_grad", g, x, out, kernel=kernel, stride=stride, padding=padding,
                 ceil_mode=ceil_mode),)


register_op("max_pool2d", _max_pool_kernel, _pool_infer, _max_pool_vjp, fresh=True)


def _max_pool_grad_kernel(g, x, best, kernel, stride, padding, ceil_mode):
    """The cotangent goes to the first maximum of each window (row-major), as
    Paddle's and PyTorch's argmax masks do; `best` is the forward's output."""
    n, c, oh, ow = g.shape
    ext = _pool_extents(x.shape, kernel, stride, padding, oh, ow)
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _pad(x, ext, low)
    free = np.ones(best.shape, bool)
    hit = np.empty(best.shape, bool)
    gxp = np.zeros(xp.shape, g.dtype)
    # windows that do not overlap write each element once: a masked copy
    disjoint = stride[0] >= kernel[0] and stride[1] >= kernel[1]
    for _, _, di, dj in _taps(kernel, (1, 1)):
        np.equal(_window(xp, di, dj, stride, oh, ow), best, out=hit)
        hit &= free
        free ^= hit
        win = _window(gxp, di, dj, stride, oh, ow)
        if disjoint:
            np.copyto(win, g, where=hit)
        else:
            np.add(win, g, out=win, where=hit)
    t, _, l, _ = ext
    if ext == (0, 0, 0, 0):
        return gxp
    return np.ascontiguousarray(gxp[:, :, t:t + x.shape[2], l:l + x.shape[3]])


def _max_pool_grad_vjp(gg, out, g, x, best, kernel, stride, padding, ceil_mode):
    # linear in g: the windows' argmax picks gg's elements; nothing flows to x
    return bind("max_pool2d_pick", gg, x, kernel=kernel, stride=stride, padding=padding,
                ceil_mode=ceil_mode), None, None


register_op("max_pool2d_grad", _max_pool_grad_kernel,
            lambda g, x, best, **_: Aval(tuple(x.shape), g.dtype), _max_pool_grad_vjp,
            fresh=True)


def _max_pool_pick_kernel(v, x, kernel, stride, padding, ceil_mode):
    """`v` (shaped as x) read at each window's first maximum of `x`."""
    oh, ow = _pool_geometry(x.shape, kernel, stride, padding, ceil_mode)
    ext = _pool_extents(x.shape, kernel, stride, padding, oh, ow)
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp, vp = _pad(x, ext, low), _pad(v, ext, 0)
    best = _max_pool_kernel(x, kernel, stride, padding, ceil_mode)
    free = np.ones(best.shape, bool)
    out = np.zeros(best.shape, v.dtype)
    for _, _, di, dj in _taps(kernel, (1, 1)):
        hit = _window(xp, di, dj, stride, oh, ow) == best
        hit &= free
        free &= ~hit
        out += np.where(hit, _window(vp, di, dj, stride, oh, ow), 0)
    return out


def _max_pool_pick_vjp(gp, out, v, x, kernel, stride, padding, ceil_mode):
    attrs = dict(kernel=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode)
    return bind("max_pool2d_grad", gp, x, bind("max_pool2d", x, **attrs), **attrs), None


register_op("max_pool2d_pick", _max_pool_pick_kernel,
            lambda v, x, **a: Aval(_pool_infer(x, **a).shape, v.dtype), _max_pool_pick_vjp,
            fresh=True)


def avg_pool_counts(shape, kernel, stride, padding, ceil_mode, exclusive):
    """(oh, ow) divisors: the window's elements inside the input (exclusive) or
    inside the padded input (not exclusive; ceil mode's overhang never counts)."""
    oh, ow = _pool_geometry(shape, kernel, stride, padding, ceil_mode)
    t, b, l, r = padding

    def counts(size, k, s, lo, hi, n_out):
        start = np.arange(n_out) * s - lo
        stop = start + k
        if exclusive:
            return np.minimum(stop, size) - np.maximum(start, 0)
        return np.minimum(stop, size + hi) - start

    ch = counts(shape[2], kernel[0], stride[0], t, b, oh)
    cw = counts(shape[3], kernel[1], stride[1], l, r, ow)
    return np.multiply.outer(ch, cw)


def _avg_pool_kernel(x, kernel, stride, padding, ceil_mode, exclusive):
    oh, ow = _pool_geometry(x.shape, kernel, stride, padding, ceil_mode)
    xp = _pad(x, _pool_extents(x.shape, kernel, stride, padding, oh, ow))
    out = None
    for _, _, di, dj in _taps(kernel, (1, 1)):
        win = _window(xp, di, dj, stride, oh, ow)
        out = win.copy() if out is None else np.add(out, win, out=out)
    counts = avg_pool_counts(x.shape, kernel, stride, padding, ceil_mode, exclusive)
    return np.divide(out, counts.astype(x.dtype), out=out)


def _avg_pool_vjp(g, out, x, kernel, stride, padding, ceil_mode, exclusive):
    hw, like = _grad_size(x)
    return (bind("avg_pool2d_grad", g, *like, input_hw=hw, kernel=kernel, stride=stride,
                 padding=padding, ceil_mode=ceil_mode, exclusive=exclusive),)


register_op("avg_pool2d", _avg_pool_kernel, _pool_infer, _avg_pool_vjp, fresh=True)


def given_hw(input_hw, like):
    """`input_hw` with each dim unknown when the program was built read from
    the `like` input (see `_grad_size`); None where that is unknown too."""
    return tuple(like[0].shape[2 + i] if n is None and like else n
                 for i, n in enumerate(input_hw))


def _avg_pool_grad_kernel(g, *like, input_hw, kernel, stride, padding, ceil_mode, exclusive):
    input_hw = given_hw(input_hw, like)
    n, c, oh, ow = g.shape
    shape = (n, c) + tuple(input_hw)
    ext = _pool_extents(shape, kernel, stride, padding, oh, ow)
    counts = avg_pool_counts(shape, kernel, stride, padding, ceil_mode, exclusive)
    share = g / counts.astype(g.dtype)
    t, b, l, r = ext
    gxp = np.zeros((n, c, input_hw[0] + t + b, input_hw[1] + l + r), g.dtype)
    for _, _, di, dj in _taps(kernel, (1, 1)):
        _window(gxp, di, dj, stride, oh, ow)[...] += share
    return np.ascontiguousarray(gxp[:, :, t:t + input_hw[0], l:l + input_hw[1]])


def _avg_pool_grad_vjp(gg, out, g, *like, input_hw, kernel, stride, padding, ceil_mode,
                       exclusive):
    return (bind("avg_pool2d", gg, kernel=kernel, stride=stride, padding=padding,
                 ceil_mode=ceil_mode, exclusive=exclusive),) + (None,) * len(like)


register_op("avg_pool2d_grad", _avg_pool_grad_kernel,
            lambda g, *like, input_hw, **_: Aval(tuple(g.shape[:2]) + given_hw(input_hw, like),
                                                 g.dtype),
            _avg_pool_grad_vjp, fresh=True)


def max_pool2d(x, kernel, stride, padding, ceil_mode=False):
    x = lift(x)
    attrs = dict(kernel=tuple(kernel), stride=tuple(stride), padding=tuple(padding),
                 ceil_mode=bool(ceil_mode))
    _pool_infer(x, **attrs)
    return bind("max_pool2d", x, **attrs)


def avg_pool2d(x, kernel, stride, padding, ceil_mode=False, exclusive=True):
    x = lift(x)
    attrs = dict(kernel=tuple(kernel), stride=tuple(stride), padding=tuple(padding),
                 ceil_mode=bool(ceil_mode))
    _pool_infer(x, **attrs)
    return bind("avg_pool2d", x, exclusive=bool(exclusive), **attrs)


def adaptive_bins(size, out):
    """Paddle's adaptive bins: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def adaptive_matrix(size, out, dtype):
    """(out, size) averaging matrix of the adaptive bins: an adaptive average pool
    is separable, `A_h @ x @ A_w^T`."""
    m = np.zeros((out, size), dtype)
    for i, (a, b) in enumerate(adaptive_bins(size, out)):
        m[i, a:b] = 1.0 / (b - a)
    return m

