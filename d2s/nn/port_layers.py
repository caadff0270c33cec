"""Layers of the API that ported models call beyond the first target list
(issue 25): thin Layers around the functions of `patch_functional`,
`vision_functional`, `activation_more`, `loss_more` and `ctc`, with
PaddlePaddle's constructor arguments."""
from __future__ import annotations

from . import patch_functional as PF
from .layer import Layer

__all__ = ["Unfold", "Fold", "MaxUnPool2D", "AdaptiveMaxPool1D", "AdaptiveMaxPool2D"]


class Unfold(Layer):
    """im2col (`F.unfold`)."""

    def __init__(self, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self._args = (kernel_sizes, strides, paddings, dilations)

    def forward(self, x):
        return PF.unfold(x, *self._args)


class Fold(Layer):
    """col2im (`F.fold`)."""

    def __init__(self, output_sizes, kernel_sizes, dilations=1, paddings=0, strides=1,
                 name=None):
        super().__init__()
        self._args = (output_sizes, kernel_sizes, strides, paddings, dilations)

    def forward(self, x):
        return PF.fold(x, *self._args)


class MaxUnPool2D(Layer):
    """`F.max_unpool2d`: values written back at a max pool's mask."""

    def __init__(self, kernel_size, stride=None, padding=0, data_format="NCHW",
                 output_size=None, name=None):
        super().__init__()
        self._args = (kernel_size, stride, padding, data_format, output_size)

    def forward(self, x, indices):
        return PF.max_unpool2d(x, indices, *self._args)


class AdaptiveMaxPool2D(Layer):
    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        self._output_size, self._return_mask = output_size, return_mask

    def forward(self, x):
        return PF.adaptive_max_pool2d(x, self._output_size, self._return_mask)


class AdaptiveMaxPool1D(Layer):
    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        self._output_size, self._return_mask = output_size, return_mask

    def forward(self, x):
        return PF.adaptive_max_pool1d(x, self._output_size, self._return_mask)
