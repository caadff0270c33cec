"""Convolution, pooling and shape layers (Paddle's classes, parameter names and
default initialisation: conv weights Normal(0, sqrt(2 / (k_h * k_w * in_channels))),
biases zeros)."""
from __future__ import annotations

import math

from . import common_functional as OF
from . import conv_functional as CF
from . import initializer as init
from .layer import Layer
from .layers import _attr
from ..core.ops import flatten

__all__ = ["Conv1D", "Conv2D", "Conv1DTranspose", "Conv2DTranspose", "MaxPool1D", "MaxPool2D",
           "AvgPool1D", "AvgPool2D",
           "AdaptiveAvgPool1D", "AdaptiveAvgPool2D", "Flatten", "Identity", "Pad1D", "Pad2D",
           "Upsample", "UpsamplingNearest2D", "UpsamplingBilinear2D"]


def _ints(v, n, where, name):
    out = [int(v)] * n if isinstance(v, int) else [int(a) for a in v]
    if len(out) != n or min(out) <= 0:
        raise ValueError(f"{where}: {name} must be a positive int or {n} positive ints, got {v!r}")
    return out


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Layer):
    _dims = 2
    _formats = ("NCHW", "NHWC")

    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 groups, padding_mode, weight_attr, bias_attr, data_format):
        super().__init__()
        where = type(self).__name__
        if data_format not in self._formats:
            raise ValueError(f"{where}: data_format must be one of {list(self._formats)}, got "
                             f"{data_format!r}")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{where}: padding_mode must be one of {list(_PADDING_MODES)}, "
                             f"got {padding_mode!r}")
        # Paddle pads the input itself for the other modes (Informer's circular
        # token embedding, reflect-padded conv in vocoders and GANs), then
        # convolves without padding: `_pad_input` is F.pad's list, last dim first
        self._pad_input = None
        if padding_mode != "zeros":
            if isinstance(padding, str):
                raise ValueError(f"{where}: padding_mode={padding_mode!r} needs padding as "
                                 f"an int or {self._dims} ints, got {padding!r}")
            per_dim = [int(padding)] * self._dims if isinstance(padding, int) else \
                [int(p) for p in padding]
            if len(per_dim) != self._dims or min(per_dim) < 0:
                raise ValueError(f"{where}: padding must be an int or {self._dims} ints >= 0 "
                                 f"with padding_mode={padding_mode!r}, got {padding!r}")
            self._pad_input = [p for p in reversed(per_dim) for _ in range(2)]
            padding = 0
        in_channels, out_channels, groups = int(in_channels), int(out_channels), int(groups)
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{where}: groups={groups} must divide in_channels={in_channels} "
                             f"and out_channels={out_channels}")
        self._in_channels, self._out_channels = in_channels, out_channels
        self._kernel_size = _ints(kernel_size, self._dims, where, "kernel_size")
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._groups, self._padding_mode, self._data_format = groups, padding_mode, data_format
        std = math.sqrt(2.0 / (math.prod(self._kernel_size) * in_channels))
        shape = ([in_channels, out_channels // groups] if self._transposed
                 else [out_channels, in_channels // groups])
        self.weight = self.create_parameter(shape + self._kernel_size, attr=_attr(weight_attr),
                                            default_initializer=init.Normal(0.0, std))
        self.bias = self.create_parameter([out_channels], attr=_attr(bias_attr), is_bias=True,
                                          default_initializer=init.Constant(0.0))

    def _check_input(self, x):
        rank = self._dims + 2
        if len(x.shape) != rank:
            raise ValueError(f"{type(self).__name__}: expects a {rank}-D input "
                             f"({self._data_format}), got shape {list(x.shape)}")
        c = x.shape[-1 if self._data_format[-1] == "C" else 1]
        if c is not None and c != self._in_channels:
            raise ValueError(f"{type(self).__name__}: expects {self._in_channels} input "
                             f"channels, got {c} (input shape {list(x.shape)}, "
                             f"data_format {self._data_format})")

    def _padded(self, x):
        """x padded by `padding_mode` (all but 'zeros', which the conv does)."""
        if self._pad_input is None:
            return x
        return OF.pad(x, self._pad_input, mode=self._padding_mode,
                      data_format=self._data_format)

    def extra_repr(self):
        return (f"{self._in_channels}, {self._out_channels}, kernel_size={self._kernel_size}, "
                f"stride={self._stride}, padding={self._padding}"
                + (f", groups={self._groups}" if self._groups != 1 else "")
                + (f", data_format={self._data_format}"
                   if self._data_format not in ("NCHW", "NCL") else ""))


class Conv2D(_ConvNd):
    """2-D convolution; weight (out_channels, in_channels / groups, kh, kw)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode="zeros", weight_attr=None, bias_attr=None,
                 data_format="NCHW"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, padding_mode, weight_attr, bias_attr, data_format)

    def forward(self, x):
        self._check_input(x)
        return CF.conv2d(self._padded(x), self.weight, self.bias, self._stride, self._padding,
                         self._dilation, self._groups, self._data_format)


class Conv1D(_ConvNd):
    """1-D convolution; weight (out_channels, in_channels / groups, k)."""
    _dims = 1
    _formats = ("NCL", "NLC")

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode="zeros", weight_attr=None, bias_attr=None,
                 data_format="NCL"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, padding_mode, weight_attr, bias_attr, data_format)

    def forward(self, x):
        self._check_input(x)
        return CF.conv1d(self._padded(x), self.weight, self.bias, self._stride, self._padding,
                         self._dilation, self._groups, self._data_format)


class Conv2DTranspose(_ConvNd):
    """Transposed 2-D convolution; weight (in_channels, out_channels / groups, kh, kw)."""
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, dilation=1, weight_attr=None, bias_attr=None,
                 data_format="NCHW"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, "zeros", weight_attr, bias_attr, data_format)
        self._output_padding = output_padding

    def forward(self, x, output_size=None):
        self._check_input(x)
        return CF.conv2d_transpose(x, self.weight, self.bias, self._stride, self._padding,
                                   self._output_padding, self._dilation, self._groups,
                                   output_size, self._data_format)


class Conv1DTranspose(_ConvNd):
    """Transposed 1-D convolution; weight (in_channels, out_channels / groups, k)."""
    _dims = 1
    _formats = ("NCL", "NLC")
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, dilation=1, weight_attr=None, bias_attr=None,
                 data_format="NCL"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, "zeros", weight_attr, bias_attr, data_format)
        self._output_padding = output_padding

    def forward(self, x, output_size=None):
        self._check_input(x)
        return CF.conv1d_transpose(x, self.weight, self.bias, self._stride, self._padding,
                                   self._output_padding, self._groups, self._dilation,
                                   output_size, self._data_format)


class MaxPool2D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
                 data_format="NCHW", name=None):
        super().__init__(name)
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode, self.data_format = return_mask, ceil_mode, data_format

    def forward(self, x):
        return CF.max_pool2d(x, self.ksize, self.stride, self.padding, self.return_mask,
                             self.ceil_mode, self.data_format)

    def extra_repr(self):
        return f"kernel_size={self.ksize}, stride={self.stride}, padding={self.padding}"


class AvgPool2D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
                 divisor_override=None, data_format="NCHW", name=None):
        super().__init__(name)
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.exclusive = ceil_mode, exclusive
        self.divisor, self.data_format = divisor_override, data_format

    def forward(self, x):
        return CF.avg_pool2d(x, self.ksize, self.stride, self.padding, self.ceil_mode,
                             self.exclusive, self.divisor, self.data_format)

    def extra_repr(self):
        return f"kernel_size={self.ksize}, stride={self.stride}, padding={self.padding}"


class MaxPool1D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
                 name=None):
        super().__init__(name)
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode = return_mask, ceil_mode

    def forward(self, x):
        return CF.max_pool1d(x, self.ksize, self.stride, self.padding, self.return_mask,
                             self.ceil_mode)


class AvgPool1D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False,
                 name=None):
        super().__init__(name)
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.exclusive, self.ceil_mode = exclusive, ceil_mode

    def forward(self, x):
        return CF.avg_pool1d(x, self.ksize, self.stride, self.padding, self.exclusive,
                             self.ceil_mode)


class AdaptiveAvgPool2D(Layer):
    def __init__(self, output_size, data_format="NCHW", name=None):
        super().__init__(name)
        self._output_size, self._data_format = output_size, data_format

    def forward(self, x):
        return CF.adaptive_avg_pool2d(x, self._output_size, self._data_format)

    def extra_repr(self):
        return f"output_size={self._output_size}"


class AdaptiveAvgPool1D(Layer):
    def __init__(self, output_size, name=None):
        super().__init__(name)
        self._output_size = output_size

    def forward(self, x):
        return CF.adaptive_avg_pool1d(x, self._output_size)


class Flatten(Layer):
    """Flatten dims `start_axis`..`stop_axis` into one (default: all but the batch)."""

    def __init__(self, start_axis=1, stop_axis=-1):
        super().__init__()
        self.start_axis, self.stop_axis = start_axis, stop_axis

    def forward(self, x):
        return flatten(x, self.start_axis, self.stop_axis)


class Identity(Layer):
    """Returns its input; any constructor arguments are ignored (as Paddle)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class _PadNd(Layer):
    _n = 2
    _formats = ("NCHW", "NHWC")

    def __init__(self, padding, mode="constant", value=0.0, data_format=None, name=None):
        super().__init__(name)
        self._pad = [int(padding)] * (2 * self._n) if isinstance(padding, int) else list(padding)
        if len(self._pad) != 2 * self._n:
            raise ValueError(f"{type(self).__name__}: padding must be an int or "
                             f"{2 * self._n} ints, got {padding!r}")
        self._mode, self._value = mode, value
        self._data_format = data_format or self._formats[0]

    def forward(self, x):
        return OF.pad(x, self._pad, self._mode, self._value, self._data_format)

    def extra_repr(self):
        return f"padding={self._pad}, mode={self._mode!r}"


class Pad1D(_PadNd):
    """Pad the last dim by [left, right]."""
    _n = 1
    _formats = ("NCL", "NLC")


class Pad2D(_PadNd):
    """Pad H and W by [left, right, top, bottom]."""


class Upsample(Layer):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=False,
                 align_mode=0, data_format="NCHW", name=None):
        super().__init__(name)
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.align_mode, self.data_format = (align_corners, align_mode,
                                                                  data_format)

    def forward(self, x):
        return OF.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                              self.align_mode, self.data_format)


class UpsamplingNearest2D(Upsample):
    def __init__(self, size=None, scale_factor=None, data_format="NCHW", name=None):
        super().__init__(size, scale_factor, "nearest", False, 0, data_format, name)


class UpsamplingBilinear2D(Upsample):
    def __init__(self, size=None, scale_factor=None, data_format="NCHW", name=None):
        super().__init__(size, scale_factor, "bilinear", True, 0, data_format, name)
