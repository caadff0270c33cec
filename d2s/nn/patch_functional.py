"""Sliding-window functions of `d2s.nn.functional` built from strided slices:
`unfold` (im2col), `fold` (col2im), max pooling that also returns the argmax
mask, `max_unpool2d`, and the adaptive max pools.

All are compositions of registered ops (pad, strided getitem, stack, argmax,
put_along_axis), so gradients, the xla backend and ONNX come from those ops'
rules. A window tap is a strided slice of the padded input, never a product
with a one-hot kernel: a product would turn an `inf` next to a zero weight
into `nan`, where slicing moves each value as it is.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..core.ops import (argmax, arange, cast, concat, put_along_axis, reshape, stack,
                        take_along_axis, zeros)
from ..core.ops._base import lift
from ..core.ops.conv import adaptive_bins, pair
from ..core.ops.conv_nd import low, out_shape, pool_extents
from .common_functional import _dim_at_run_time, _pad_axis

__all__ = ["unfold", "fold", "max_unpool1d", "max_unpool2d", "max_unpool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d"]


def _paddings4(paddings, where):
    """Paddle's unfold/fold `paddings`: an int, [ph, pw] or [top, left, bottom,
    right] -> (top, bottom, left, right)."""
    if isinstance(paddings, (int, np.integer)):
        p = int(paddings)
        return (p, p, p, p)
    flat = [int(v) for v in paddings]
    if len(flat) == 2:
        return (flat[0], flat[0], flat[1], flat[1])
    if len(flat) == 4:
        return (flat[0], flat[2], flat[1], flat[3])
    raise ValueError(f"{where}: paddings must be an int, [pad_h, pad_w] or [top, left, "
                     f"bottom, right], got {paddings!r}")


def _tap_slice(step, count, dilation, k, tap):
    """The slice of tap `tap` along one padded axis: `count` windows when known,
    else up to the end less the taps after this one (a negative bound, so a
    run-time size needs no arithmetic)."""
    begin = tap * dilation
    if count is not None:
        return slice(begin, begin + step * (count - 1) + 1, step)
    rest = (k - 1 - tap) * dilation
    return slice(begin, -rest if rest else None, step)


def patches(x, kernel, stride, dilation, pads, value=0.0, out=None):
    """(N, C, prod(kernel), *out): the window taps of the channel-first `x`
    (any number of spatial dims), row-major, after padding by `pads` = (lo, hi)
    per spatial dim with `value`."""
    nd = len(kernel)
    out = out or (None,) * nd
    for d in range(nd):
        x = _pad_axis(x, 2 + d, pads[2 * d], pads[2 * d + 1], "constant", value, "unfold")
    taps = []
    for tap in itertools.product(*(range(k) for k in kernel)):
        index = (slice(None), slice(None)) + tuple(
            _tap_slice(stride[d], out[d], dilation[d], kernel[d], tap[d]) for d in range(nd))
        taps.append(x[index])
    return stack(taps, axis=2)


def _check_rank(x, n, where):
    if len(x.shape) != n:
        raise ValueError(f"{where}: expects a {n}-D input, got shape {list(x.shape)}")


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """im2col: (N, C, H, W) -> (N, C * kh * kw, L), column l holding the window
    at output position l (row-major), channel-major then kernel taps, as
    PaddlePaddle's and PyTorch's `unfold`."""
    x = lift(x)
    _check_rank(x, 4, "unfold")
    kernel = pair(kernel_sizes, "unfold", "kernel_sizes")
    stride = pair(strides, "unfold", "strides")
    dilation = pair(dilations, "unfold", "dilations")
    pads = _paddings4(paddings, "unfold")
    h, w = x.shape[2:]
    oh, ow = out_shape((h, w), kernel, stride, pads, dilation)
    for n, o in ((h, oh), (w, ow)):
        if o is not None and o <= 0:
            raise ValueError(f"unfold: kernel_sizes {list(kernel)} (dilations "
                             f"{list(dilation)}) do not fit the padded input of shape "
                             f"{list(x.shape)}")
    cols = patches(x, kernel, stride, dilation, pads, 0.0, (oh, ow))
    c, k = x.shape[1], kernel[0] * kernel[1]
    if c is not None:
        return reshape(cols, [0, c * k, -1])
    if oh is not None and ow is not None:
        return reshape(cols, [0, -1, oh * ow])
    return reshape(cols, [_dim_at_run_time(cols, 0), _dim_at_run_time(cols, 1) * k, -1])


def _interleave(piece, axis, step):
    """Rows of `piece` spread `step` apart along `axis` (zeros between): the
    first (n - 1) * step + 1 rows of the result."""
    if step == 1:
        return piece
    from ..core.ops import unsqueeze
    n = piece.shape[axis]
    spread = unsqueeze(piece, axis + 1)
    spread = _pad_axis(spread, axis + 1, 0, step - 1, "constant", 0.0, "fold")
    # leading dims copied (0); the trailing ones are known (fold's geometry)
    spread = reshape(spread, [0] * axis + [n * step] + list(piece.shape[axis + 1:]))
    index = [slice(None)] * len(piece.shape)
    index[axis] = slice(0, (n - 1) * step + 1)
    return spread[tuple(index)]


def fold(x, output_sizes, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """col2im, the adjoint of `unfold`: (N, C * kh * kw, L) -> (N, C, H, W), each
    column's values added back at its window's positions (overlaps sum)."""
    x = lift(x)
    _check_rank(x, 3, "fold")
    out_hw = pair(output_sizes, "fold", "output_sizes")
    kernel = pair(kernel_sizes, "fold", "kernel_sizes")
    stride = pair(strides, "fold", "strides")
    dilation = pair(dilations, "fold", "dilations")
    pads = _paddings4(paddings, "fold")
    oh, ow = out_shape(out_hw, kernel, stride, pads, dilation)
    k = kernel[0] * kernel[1]
    ck, length = x.shape[1:]
    if oh <= 0 or ow <= 0:
        raise ValueError(f"fold: kernel_sizes {list(kernel)} do not fit output_sizes "
                         f"{list(out_hw)} padded by {list(pads)}")
    if ck is not None and ck % k:
        raise ValueError(f"fold: the input's {ck} rows are not a multiple of the "
                         f"kernel's {k} taps ({list(kernel)})")
    if length is not None and length != oh * ow:
        raise ValueError(f"fold: the input has {length} columns, output_sizes "
                         f"{list(out_hw)} with this kernel/stride/padding make {oh * ow}")
    hp, wp = out_hw[0] + pads[0] + pads[1], out_hw[1] + pads[2] + pads[3]
    cols = reshape(x, [0, -1, k, oh, ow])
    total = None
    for t in range(k):
        i, j = divmod(t, kernel[1])
        piece = _interleave(_interleave(cols[:, :, t], 2, stride[0]), 3, stride[1])
        top, left = i * dilation[0], j * dilation[1]
        piece = _pad_axis(piece, 2, top, hp - top - ((oh - 1) * stride[0] + 1), "constant",
                          0.0, "fold")
        piece = _pad_axis(piece, 3, left, wp - left - ((ow - 1) * stride[1] + 1),
                          "constant", 0.0, "fold")
        total = piece if total is None else total + piece
    return total[:, :, pads[0]:pads[0] + out_hw[0], pads[2]:pads[2] + out_hw[1]]


# ---- max pooling with its mask, and its inverse -------------------------------------------
def max_pool_with_mask(x, kernel, stride, pads, ceil_mode):
    """(values, mask) of max pooling over the channel-first `x` (2 or 3
    spatial dims); mask[n, c, *i] is the flat index (row-major over the
    input's spatial dims) of the window's first largest value, int32 as
    PaddlePaddle's. The values are the max-pool op's (its gradient goes to
    the same first maximum)."""
    from ..core.ops.conv_nd import pool
    nd = len(kernel)
    values = pool("max_pool", x, kernel, stride, pads, ceil_mode)
    spatial = tuple(x.shape[2:])
    if ceil_mode and None in spatial:
        raise ValueError("max_pool(return_mask=True, ceil_mode=True) needs the input's "
                         "spatial dims known when the program is built (give the InputSpec "
                         "fixed spatial dims, or use ceil_mode=False)")
    out, ext = None, pads
    if None not in spatial:
        out = out_shape(spatial, kernel, stride, pads, None, ceil_mode)
        ext = pool_extents(spatial, kernel, stride, pads, out)
    cols = patches(x, kernel, stride, (1,) * nd, ext, low(np.dtype(x.dtype)), out)
    tap = argmax(cols, axis=2)                                 # (N, C, *out)
    flat, rest = None, tap
    for d in reversed(range(nd)):                              # row-major: last dim fastest
        within = rest % kernel[d]
        rest = rest // kernel[d]
        shape = [1] * nd
        shape[d] = -1
        start = reshape(arange(0, _dim_at_run_time(tap, 2 + d), dtype="int64") * stride[d]
                        - pads[2 * d], shape)
        pos = start + within
        flat = pos if flat is None else flat + pos * _plane(x, d + 1)
    return values, cast(flat, "int32")


def _plane(x, first):
    """The product of `x`'s spatial dims from spatial dim `first` on."""
    size = 1
    for d in range(first, len(x.shape) - 2):
        size = size * _dim_at_run_time(x, 2 + d)
    return size


def max_pool2d_with_mask(x, kernel, stride, pads, ceil_mode):
    """`max_pool_with_mask` of an NCHW input (flat index row * W + col)."""
    return max_pool_with_mask(x, kernel, stride, pads, ceil_mode)


def _tuple(v, nd, where, name):
    out = (int(v),) * nd if isinstance(v, (int, np.integer)) else tuple(int(a) for a in v)
    if len(out) == 1:
        out = out * nd
    if len(out) != nd or min(out) < 0:
        raise ValueError(f"{where}: {name} must be a non-negative int or {nd} of them, got "
                         f"{v!r}")
    return out


def _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, nd,
                where):
    """Each value of `x` written at its `indices` (flat positions in an output
    plane of `nd` spatial dims), zeros elsewhere."""
    x, indices = lift(x), lift(indices)
    layouts = {1: "NCL", 2: "NCHW", 3: "NCDHW"}
    if data_format != layouts[nd]:
        raise ValueError(f"{where}: data_format must be {layouts[nd]!r}, got {data_format!r}")
    _check_rank(x, nd + 2, where)
    kernel = _tuple(kernel_size, nd, where, "kernel_size")
    stride = kernel if stride is None else _tuple(stride, nd, where, "stride")
    pad = _tuple(padding, nd, where, "padding")
    if output_size is not None:
        size = [int(v) for v in output_size][-nd:]
    else:
        if None in x.shape[2:]:
            raise ValueError(f"{where}: the input's spatial dims must be known when the "
                             "program is built, or output_size given")
        size = [(n - 1) * s - 2 * p + k for n, s, p, k in zip(x.shape[2:], stride, pad, kernel)]
    n, c = _dim_at_run_time(x, 0), _dim_at_run_time(x, 1)
    flat_x = reshape(x, [0, 0, -1])
    flat_i = cast(reshape(indices, [0, 0, -1]), "int64")
    plane = zeros([n, c, int(np.prod(size))], x.dtype)
    out = put_along_axis(plane, flat_i, flat_x, axis=2)  # (a repeated index: the same max)
    return reshape(out, [0, 0] + size)


def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, data_format="NCL",
                 output_size=None, name=None):
    """`max_unpool2d` over (N, C, L)."""
    return _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, 1,
                       "max_unpool1d")


def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, data_format="NCHW",
                 output_size=None, name=None):
    """The partial inverse of `max_pool2d(return_mask=True)`: each value of `x`
    written at its `indices` (flat positions in an output plane), zeros
    elsewhere. The output is (H - 1) * stride - 2 * padding + kernel per dim,
    or `output_size` (2 ints, or the whole NCHW shape)."""
    return _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, 2,
                       "max_unpool2d")


def max_unpool3d(x, indices, kernel_size, stride=None, padding=0, data_format="NCDHW",
                 output_size=None, name=None):
    """`max_unpool2d` over (N, C, D, H, W)."""
    return _max_unpool(x, indices, kernel_size, stride, padding, data_format, output_size, 3,
                       "max_unpool3d")


# ---- adaptive max pooling: separable (a max over rows, then over columns) ----------------
def _adaptive_max_axis(x, axis, out_size):
    """Max over each adaptive bin of `axis` (known size): values and the
    argmax position along the axis."""
    n = x.shape[axis]
    if n is None:
        raise ValueError(f"adaptive_max_pool: dim {axis} of the input must be known when the "
                         "program is built (the bins depend on it)")
    vals, idx = [], []
    for a, b in adaptive_bins(n, out_size):
        index = [slice(None)] * len(x.shape)
        index[axis] = slice(a, b)
        part = x[tuple(index)]
        pos = argmax(part, axis=axis, keepdim=True)
        vals.append(take_along_axis(part, pos, axis=axis))
        idx.append(pos + a)
    return concat(vals, axis=axis), concat(idx, axis=axis)


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    """Max over PaddlePaddle's adaptive bins (output cell i covers input rows
    [floor(i * H / oh), ceil((i + 1) * H / oh))); with `return_mask`, also the
    flat index (row * W + col, int32) of each bin's first maximum."""
    x = lift(x)
    _check_rank(x, 4, "adaptive_max_pool2d")
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    h, w = x.shape[2:]
    oh = h if oh is None else int(oh)
    ow = w if ow is None else int(ow)
    by_row, row_at = _adaptive_max_axis(x, 2, oh)             # (N, C, oh, W)
    out, col_at = _adaptive_max_axis(by_row, 3, ow)           # (N, C, oh, ow)
    if not return_mask:
        return out
    row = take_along_axis(row_at, col_at, axis=3)
    return out, cast(row * w + col_at, "int32")


def adaptive_max_pool1d(x, output_size, return_mask=False, name=None):
    """`adaptive_max_pool2d` over (N, C, L) as a height-1 image."""
    from ..core.ops import squeeze, unsqueeze
    x = lift(x)
    _check_rank(x, 3, "adaptive_max_pool1d")
    got = adaptive_max_pool2d(unsqueeze(x, 2), [1, output_size], return_mask)
    if not return_mask:
        return squeeze(got, 2)
    return squeeze(got[0], 2), squeeze(got[1], 2)


def adaptive_max_pool3d(x, output_size, return_mask=False, name=None):
    """`adaptive_max_pool2d` over (N, C, D, H, W): a max over the depth bins,
    then the row bins, then the column bins; the mask is the flat index
    (d * H * W + h * W + w, int32) of each bin's first maximum."""
    x = lift(x)
    _check_rank(x, 5, "adaptive_max_pool3d")
    sizes = [output_size] * 3 if isinstance(output_size, int) else list(output_size)
    d, h, w = x.shape[2:]
    od, oh, ow = [n if o is None else int(o) for n, o in zip((d, h, w), sizes)]
    by_d, d_at = _adaptive_max_axis(x, 2, od)                 # (N, C, od, H, W)
    by_h, h_at = _adaptive_max_axis(by_d, 3, oh)              # (N, C, od, oh, W)
    out, w_at = _adaptive_max_axis(by_h, 4, ow)               # (N, C, od, oh, ow)
    if not return_mask:
        return out
    hh = take_along_axis(h_at, w_at, axis=4)                  # the row of each maximum
    hw = reshape(hh * w + w_at, [0, 0, od, -1])
    dd = reshape(take_along_axis(reshape(d_at, [0, 0, od, -1]), hw, axis=3),
                 [0, 0, od, oh, ow])
    return out, cast(dd * (h * w) + hh * w + w_at, "int32")
