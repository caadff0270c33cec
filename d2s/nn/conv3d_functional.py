"""`d2s.nn.functional` 3-D convolution and pooling (Paddle's `conv3d`,
`conv3d_transpose`, `max_pool3d`, `avg_pool3d`): layouts ("NCDHW" /
"NDHWC"), padding forms and bias here; the arithmetic is the ops of
`d2s/core/ops/conv3d.py`."""
from __future__ import annotations

from ..core.ops import constant, reshape, transpose
from ..core.ops._base import lift
from ..core.ops.conv_nd import transposed_geometry
from ..core.ops.conv3d import (avg_pool3d as _avg_pool3d, avg_pool3d_counts, conv3d as _conv3d,
                               conv3d_transpose_op, max_pool3d as _max_pool3d, pads3d, triple)

__all__ = ["conv3d", "conv3d_transpose", "max_pool3d", "avg_pool3d"]

_TO_NCDHW, _TO_NDHWC = (0, 4, 1, 2, 3), (0, 2, 3, 4, 1)


def _layout(x, data_format, where):
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError(f"{where}: data_format must be 'NCDHW' or 'NDHWC', got "
                         f"{data_format!r}")
    if len(x.shape) != 5:
        raise ValueError(f"{where}: expects a 5-D input ({data_format}), got shape "
                         f"{list(x.shape)}")
    last = data_format == "NDHWC"
    return (transpose(x, _TO_NCDHW) if last else x), last


def _bias(out, bias):
    return out if bias is None else out + reshape(bias, [1, -1, 1, 1, 1])


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
           data_format="NCDHW", name=None):
    """3-D convolution; `weight` is (out_channels, in_channels / groups, kd, kh, kw)."""
    x, weight = lift(x), lift(weight)
    x, last = _layout(x, data_format, "conv3d")
    if len(weight.shape) != 5:
        raise ValueError(f"conv3d: weight must be 5-D (out, in/groups, kd, kh, kw), got "
                         f"{list(weight.shape)}")
    groups = int(groups)
    if groups <= 0:
        raise ValueError(f"conv3d: groups must be positive, got {groups}")
    c = x.shape[1]
    if c is not None and c % groups:
        raise ValueError(f"conv3d: groups={groups} does not divide the input's {c} channels")
    stride, dilation = triple(stride, "conv3d", "stride"), triple(dilation, "conv3d", "dilation")
    pads = pads3d(padding, tuple(x.shape[2:]), tuple(weight.shape[2:]), stride, dilation,
                  "conv3d", channel_last=last)
    out = _bias(_conv3d(x, weight, stride, pads, dilation, groups), bias)
    return transpose(out, _TO_NDHWC) if last else out


def conv3d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1,
                     groups=1, output_size=None, data_format="NCDHW", name=None):
    """Transposed 3-D convolution (`conv3d`'s gradient w.r.t. its input); `weight`
    is (in_channels, out_channels / groups, kd, kh, kw). Output size per dim:
    `(in - 1) * stride - pad_before - pad_after + dilation * (k - 1) + 1 +
    output_padding`; `output_size` picks `output_padding` instead."""
    where = "conv3d_transpose"
    x, weight = lift(x), lift(weight)
    x, last = _layout(x, data_format, where)
    if len(weight.shape) != 5:
        raise ValueError(f"{where}: weight must be 5-D (in, out/groups, kd, kh, kw), got "
                         f"{list(weight.shape)}")
    groups = int(groups)
    if weight.shape[0] % groups:
        raise ValueError(f"{where}: groups={groups} does not divide in_channels "
                         f"{weight.shape[0]}")
    stride, dilation = triple(stride, where, "stride"), triple(dilation, where, "dilation")
    pads, sizes, extra = transposed_geometry(
        where, tuple(x.shape[2:]), tuple(weight.shape[2:]), stride, dilation, padding,
        output_size, output_padding,
        lambda p: pads3d(p, (None,) * 3, tuple(weight.shape[2:]), stride, dilation, where,
                         channel_last=last))
    out = conv3d_transpose_op(x, weight, sizes, stride, pads, dilation, groups, extra)
    out = _bias(out, bias)
    return transpose(out, _TO_NDHWC) if last else out


def _pool_args(x, kernel_size, stride, padding, data_format, where):
    x, last = _layout(lift(x), data_format, where)
    kernel = triple(kernel_size, where, "kernel_size")
    stride = kernel if stride is None else triple(stride, where, "stride")
    pads = pads3d(padding, tuple(x.shape[2:]), kernel, stride, (1, 1, 1), where,
                  channel_last=last)
    return x, kernel, stride, pads, last


def max_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, return_mask=False,
               data_format="NCDHW", name=None):
    """3-D max pooling (`stride` defaults to `kernel_size`)."""
    x, kernel, stride, pads, last = _pool_args(x, kernel_size, stride, padding, data_format,
                                               "max_pool3d")
    if return_mask:  # (values, the flat argmax index into each input volume, int32)
        from .patch_functional import max_pool_with_mask
        out, mask = max_pool_with_mask(x, kernel, stride, pads, ceil_mode)
        return (transpose(out, _TO_NDHWC), transpose(mask, _TO_NDHWC)) if last else (out, mask)
    out = _max_pool3d(x, kernel, stride, pads, ceil_mode)
    return transpose(out, _TO_NDHWC) if last else out


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
               divisor_override=None, data_format="NCDHW", name=None):
    """3-D average pooling; `exclusive` leaves padding out of each divisor."""
    x, kernel, stride, pads, last = _pool_args(x, kernel_size, stride, padding, data_format,
                                               "avg_pool3d")
    if divisor_override:
        out = _avg_pool3d(x, kernel, stride, pads, ceil_mode, exclusive=False)
        counts = avg_pool3d_counts(tuple(x.shape[2:]), kernel, stride, pads, ceil_mode, False)
        out = out * constant((counts / float(divisor_override)).astype(x.dtype))
    else:
        out = _avg_pool3d(x, kernel, stride, pads, ceil_mode, exclusive)
    return transpose(out, _TO_NDHWC) if last else out
