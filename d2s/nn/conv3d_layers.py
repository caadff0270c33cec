"""3-D convolution and pooling layers (Paddle's `Conv3D`, `Conv3DTranspose`,
`MaxPool3D`, `AvgPool3D`): parameters and initialisation as the 2-D
layers (`conv_layers._ConvNd`), arithmetic in `conv3d_functional`."""
from __future__ import annotations

from . import conv3d_functional as F3
from .conv_layers import _ConvNd
from .layer import Layer

__all__ = ["Conv3D", "Conv3DTranspose", "MaxPool3D", "AvgPool3D"]


class Conv3D(_ConvNd):
    """3-D convolution; weight (out_channels, in_channels / groups, kd, kh, kw)."""
    _dims = 3
    _formats = ("NCDHW", "NDHWC")

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, padding_mode="zeros", weight_attr=None, bias_attr=None,
                 data_format="NCDHW"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, padding_mode, weight_attr, bias_attr, data_format)

    def forward(self, x):
        self._check_input(x)
        return F3.conv3d(self._padded(x), self.weight, self.bias, self._stride, self._padding,
                         self._dilation, self._groups, self._data_format)


class Conv3DTranspose(_ConvNd):
    """Transposed 3-D convolution; weight (in_channels, out_channels / groups, kd, kh, kw)."""
    _dims = 3
    _formats = ("NCDHW", "NDHWC")
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, dilation=1, weight_attr=None, bias_attr=None,
                 data_format="NCDHW"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, "zeros", weight_attr, bias_attr, data_format)
        self._output_padding = output_padding

    def forward(self, x, output_size=None):
        self._check_input(x)
        return F3.conv3d_transpose(x, self.weight, self.bias, self._stride, self._padding,
                                   self._output_padding, self._dilation, self._groups,
                                   output_size, self._data_format)


class MaxPool3D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
                 data_format="NCDHW", name=None):
        super().__init__(name)
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode, self.data_format = return_mask, ceil_mode, data_format

    def forward(self, x):
        return F3.max_pool3d(x, self.ksize, self.stride, self.padding, self.ceil_mode,
                             self.return_mask, self.data_format)

    def extra_repr(self):
        return f"kernel_size={self.ksize}, stride={self.stride}, padding={self.padding}"


class AvgPool3D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
                 divisor_override=None, data_format="NCDHW", name=None):
        super().__init__(name)
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.exclusive = ceil_mode, exclusive
        self.divisor, self.data_format = divisor_override, data_format

    def forward(self, x):
        return F3.avg_pool3d(x, self.ksize, self.stride, self.padding, self.ceil_mode,
                             self.exclusive, self.divisor, self.data_format)

    def extra_repr(self):
        return f"kernel_size={self.ksize}, stride={self.stride}, padding={self.padding}"
