"""Convolution and pooling functions of `d2s.nn.functional` (Paddle's signatures).

They normalize Paddle's argument forms (ints or pairs, padding strings and
per-side lists, channel-last layouts) and call the `conv2d` / `*_pool2d`
ops, which take NCHW and normalized attributes only; 1-D forms run as 2-D
ones over a height of 1. The adaptive average pool is separable and exact as
two products with constant averaging matrices (one `mean` when the output is
1x1), so it needs no op of its own.
"""
from __future__ import annotations

import numpy as np

from ..core.dispatch import bind
from ..core.ops import (arange, cast, constant, matmul, mean, reshape, shape, squeeze,
                        transpose, unsqueeze)
from ..core.ops._base import lift
from .same_conv_unknown import needs_run_time_same, same_at_run_time
from ..core.ops.conv_nd import transposed_conv_attrs, transposed_geometry
from ..core.ops.conv import (adaptive_matrix, avg_pool2d as _avg_pool2d, avg_pool_counts,
                             conv2d as _conv2d, conv_pads, max_pool2d as _max_pool2d, pair)

__all__ = ["conv1d", "conv2d", "conv1d_transpose", "conv2d_transpose", "max_pool1d",
           "max_pool2d", "avg_pool1d", "avg_pool2d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d"]

_TO_NCHW, _TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)


def _channel_last(data_format, where, allowed=("NCHW", "NHWC")):
    if data_format not in allowed:
        raise ValueError(f"{where}: data_format must be one of {list(allowed)}, got "
                         f"{data_format!r}")
    return data_format in ("NHWC", "NLC")


def _rank(x, n, where, layout):
    if len(x.shape) != n:
        raise ValueError(f"{where}: expects a {n}-D input ({layout}), got shape "
                         f"{list(x.shape)}")


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           data_format="NCHW", name=None):
    """2-D convolution; `weight` is (out_channels, in_channels / groups, kh, kw)."""
    x, weight = lift(x), lift(weight)
    last = _channel_last(data_format, "conv2d")
    _rank(x, 4, "conv2d", data_format)
    if len(weight.shape) != 4:
        raise ValueError(f"conv2d: weight must be 4-D (out, in/groups, kh, kw), got "
                         f"{list(weight.shape)}")
    groups = int(groups)
    if groups <= 0:
        raise ValueError(f"conv2d: groups must be positive, got {groups}")
    channels = x.shape[3 if last else 1]
    if channels is not None and channels % groups:
        raise ValueError(f"conv2d: groups={groups} does not divide the input's {channels} "
                         "channels")
    if weight.shape[0] is not None and weight.shape[0] % groups:
        raise ValueError(f"conv2d: groups={groups} does not divide out_channels "
                         f"{weight.shape[0]}")
    stride, dilation = pair(stride, "conv2d", "stride"), pair(dilation, "conv2d", "dilation")
    if last:
        x = transpose(x, _TO_NCHW)
    if needs_run_time_same(padding, tuple(x.shape[2:]), stride):
        out = same_at_run_time(
            lambda pads: _conv2d(x, weight, (1, 1), pads, dilation, groups), x,
            tuple(weight.shape[2:]), stride, dilation)
    else:
        pads = conv_pads(padding, tuple(x.shape[2:]), tuple(weight.shape[2:]), stride,
                         dilation, "conv2d", channel_last=last)
        out = _conv2d(x, weight, stride, pads, dilation, groups)
    if bias is not None:
        out = out + reshape(bias, [1, -1, 1, 1])
    return transpose(out, _TO_NHWC) if last else out


def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1,
                     groups=1, output_size=None, data_format="NCHW", name=None):
    """Transposed 2-D convolution (the gradient of `conv2d` w.r.t. its input);
    `weight` is (in_channels, out_channels / groups, kh, kw). The output is
    `(in - 1) * stride - pad_before - pad_after + dilation * (k - 1) + 1 +
    output_padding`; `output_size` picks `output_padding` instead."""
    x, weight = lift(x), lift(weight)
    where = "conv2d_transpose"
    last = _channel_last(data_format, where)
    _rank(x, 4, where, data_format)
    if len(weight.shape) != 4:
        raise ValueError(f"{where}: weight must be 4-D (in, out/groups, kh, kw), got "
                         f"{list(weight.shape)}")
    groups = int(groups)
    stride, dilation = pair(stride, where, "stride"), pair(dilation, where, "dilation")
    if last:
        x = transpose(x, _TO_NCHW)
    c, (h, w) = x.shape[1], x.shape[2:]
    if c is not None and c != weight.shape[0]:
        raise ValueError(f"{where}: the input has {c} channels, the weight "
                         f"{list(weight.shape)} expects {weight.shape[0]}")
    if weight.shape[0] % groups:
        raise ValueError(f"{where}: groups={groups} does not divide in_channels "
                         f"{weight.shape[0]}")
    pads, hw, extra = transposed_geometry(
        where, (h, w), tuple(weight.shape[2:]), stride, dilation, padding, output_size,
        output_padding, lambda p: conv_pads(p, (None, None), tuple(weight.shape[2:]), stride,
                                            dilation, where, channel_last=last))
    out = bind("conv2d_grad_input", x, weight, input_hw=hw, stride=stride, padding=pads,
               dilation=dilation, groups=groups, **transposed_conv_attrs(hw, extra))
    if bias is not None:
        out = out + reshape(bias, [1, -1, 1, 1])
    return transpose(out, _TO_NHWC) if last else out


def conv1d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1, output_size=None, data_format="NCL", name=None):
    x, weight = lift(x), lift(weight)
    last = _channel_last(data_format, "conv1d_transpose", ("NCL", "NLC"))
    _rank(x, 3, "conv1d_transpose", data_format)
    x = unsqueeze(x, 1 if last else 2)
    op = [0, output_padding] if isinstance(output_padding, int) else [0] + list(output_padding)
    size = None if output_size is None else [1, output_size] if isinstance(
        output_size, int) else [1] + list(output_size)
    out = conv2d_transpose(x, unsqueeze(weight, 2), bias, _one(stride),
                           _pads_1d(padding, "conv1d_transpose"), op, _one(dilation), groups,
                           size, "NHWC" if last else "NCHW")
    return squeeze(out, 1 if last else 2)


def _pads_1d(padding, where):
    """A 1-D padding (int, [p], [left, right], [[0,0],[0,0],[l,r]] or a string) as
    the 2-D padding of a height-1 image."""
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return [0, 0, padding, padding]
    flat = list(padding)
    if flat and all(isinstance(v, (list, tuple)) for v in flat):
        flat = [v for p in flat[-1:] for v in p]
    if len(flat) == 1:
        return [0, 0, int(flat[0]), int(flat[0])]
    if len(flat) == 2:
        return [0, 0, int(flat[0]), int(flat[1])]
    raise ValueError(f"{where}: padding must be an int, 1 or 2 ints or a string, got "
                     f"{padding!r}")


def _one(v):
    return [1, v] if isinstance(v, int) else [1] + list(v)


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           data_format="NCL", name=None):
    """1-D convolution; `weight` is (out_channels, in_channels / groups, k)."""
    x, weight = lift(x), lift(weight)
    last = _channel_last(data_format, "conv1d", ("NCL", "NLC"))
    _rank(x, 3, "conv1d", data_format)
    x = unsqueeze(x, 1 if last else 2)
    out = conv2d(x, unsqueeze(weight, 2), bias, _one(stride), _pads_1d(padding, "conv1d"),
                 _one(dilation), groups, "NHWC" if last else "NCHW")
    return squeeze(out, 1 if last else 2)


def _pool_args(x, kernel_size, stride, padding, data_format, where, run_time_same=False):
    """(x in NCHW, kernel, stride, pads, channel-last?); `pads` is None where
    `run_time_same` allows 'SAME' of a strided unknown dim to be resolved per
    run (`same_at_run_time`)."""
    last = _channel_last(data_format, where)
    _rank(x, 4, where, data_format)
    kernel = pair(kernel_size, where, "kernel_size")
    stride = kernel if stride is None else pair(stride, where, "stride")
    if last:
        x = transpose(x, _TO_NCHW)
    if run_time_same and needs_run_time_same(padding, tuple(x.shape[2:]), stride):
        return x, kernel, stride, None, last
    pads = conv_pads(padding, tuple(x.shape[2:]), kernel, stride, (1, 1), where,
                     channel_last=last)
    return x, kernel, stride, pads, last


def max_pool2d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
               data_format="NCHW", name=None):
    """2-D max pooling (`stride` defaults to `kernel_size`); `return_mask` also
    gives each window's argmax as a flat index into its input plane (int32,
    for `max_unpool2d`)."""
    x, kernel, stride, pads, last = _pool_args(lift(x), kernel_size, stride, padding,
                                               data_format, "max_pool2d",
                                               not (return_mask or ceil_mode))
    if pads is None:
        out = same_at_run_time(lambda p: _max_pool2d(x, kernel, (1, 1), p, False), x, kernel,
                               stride, (1, 1))
        return transpose(out, _TO_NHWC) if last else out
    if return_mask:
        from .patch_functional import max_pool2d_with_mask
        out, mask = max_pool2d_with_mask(x, kernel, stride, pads, ceil_mode)
        return (transpose(out, _TO_NHWC), transpose(mask, _TO_NHWC)) if last else (out, mask)
    out = _max_pool2d(x, kernel, stride, pads, ceil_mode)
    return transpose(out, _TO_NHWC) if last else out


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
               divisor_override=None, data_format="NCHW", name=None):
    """2-D average pooling; `exclusive` leaves padding out of each divisor."""
    x, kernel, stride, pads, last = _pool_args(lift(x), kernel_size, stride, padding,
                                               data_format, "avg_pool2d",
                                               not (divisor_override or ceil_mode))
    if pads is None:
        out = same_at_run_time(lambda p: _avg_pool2d(x, kernel, (1, 1), p, False, exclusive),
                               x, kernel, stride, (1, 1))
        return transpose(out, _TO_NHWC) if last else out
    if divisor_override:
        out = _avg_pool2d(x, kernel, stride, pads, ceil_mode, exclusive=False)
        counts = avg_pool_counts(x.shape, kernel, stride, pads, ceil_mode, False)
        out = out * constant((counts / float(divisor_override)).astype(x.dtype))
    else:
        out = _avg_pool2d(x, kernel, stride, pads, ceil_mode, exclusive)
    return transpose(out, _TO_NHWC) if last else out


def _pool1d(fn, x, kernel_size, stride, padding, where, **kw):
    x = lift(x)
    _rank(x, 3, where, "NCL")
    out = fn(unsqueeze(x, 2), _one(kernel_size), None if stride is None else _one(stride),
             _pads_1d(padding, where), **kw)
    if isinstance(out, tuple):  # (values, mask)
        return tuple(squeeze(o, 2) for o in out)
    return squeeze(out, 2)


def max_pool1d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
               name=None):
    return _pool1d(max_pool2d, x, kernel_size, stride, padding, "max_pool1d",
                   return_mask=return_mask, ceil_mode=ceil_mode)


def avg_pool1d(x, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False,
               name=None):
    return _pool1d(avg_pool2d, x, kernel_size, stride, padding, "avg_pool1d",
                   exclusive=exclusive, ceil_mode=ceil_mode)


def adaptive_avg_pool2d(x, output_size, data_format="NCHW", name=None):
    """Average over Paddle's adaptive bins: output cell i covers input rows
    [floor(i * H / out_h), ceil((i + 1) * H / out_h)); a None size keeps the dim."""
    x = lift(x)
    last = _channel_last(data_format, "adaptive_avg_pool2d")
    _rank(x, 4, "adaptive_avg_pool2d", data_format)
    if last:
        x = transpose(x, _TO_NCHW)
    h, w = x.shape[2:]
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    oh = h if oh is None else int(oh)
    ow = w if ow is None else int(ow)
    if oh == 1 and ow == 1:
        out = mean(x, axis=[2, 3], keepdim=True)
    else:
        out = x
        if oh != h:
            out = matmul(_bins(x, 2, oh), out)
        if ow != w:
            out = matmul(out, transpose(_bins(x, 3, ow), [1, 0]))
    return transpose(out, _TO_NHWC) if last else out


def _bins(x, axis, out):
    """The (out, size) averaging matrix of the adaptive bins along `axis`: a
    constant where the size is known when the program is built; else made
    from the size when it runs (the same bins, as ops)."""
    size = x.shape[axis]
    if size is not None:
        return constant(adaptive_matrix(size, out, x.dtype))
    size = shape(x)[axis]
    i = constant(np.arange(out, dtype=np.int64).reshape(out, 1))
    start = (i * size) // out
    stop = ((i + 1) * size + (out - 1)) // out               # ceil((i + 1) * size / out)
    pos = arange(0, size, dtype="int64")
    inside = cast((pos >= start) & (pos < stop), x.dtype)
    return inside / cast(stop - start, x.dtype)


def adaptive_avg_pool1d(x, output_size, name=None):
    x = lift(x)
    _rank(x, 3, "adaptive_avg_pool1d", "NCL")
    return squeeze(adaptive_avg_pool2d(unsqueeze(x, 2), [1, output_size]), 2)
