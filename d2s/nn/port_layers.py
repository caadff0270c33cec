"""Layers of the API that ported models call beyond the first target list
(issue 25): thin Layers around the functions of `patch_functional`,
`vision_functional`, `activation_more`, `loss_more` and `ctc`, with
PaddlePaddle's constructor arguments."""
from __future__ import annotations

from . import patch_functional as PF
from . import vision_functional as VF
from .conv_layers import _PadNd
from .layer import Layer

__all__ = ["Unfold", "Fold", "MaxUnPool2D", "AdaptiveMaxPool1D", "AdaptiveMaxPool2D",
           "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "LocalResponseNorm", "ZeroPad2D",
           "Pad3D", "Dropout2D", "Dropout3D", "AlphaDropout", "AdaptiveAvgPool3D"]


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


def _calling(fn, doc, *names, defaults=None, training=False):
    """A Layer class calling `fn(x, **its constructor arguments)` (in
    PaddlePaddle's order `names`); `training` passes the layer's mode."""
    defaults = dict(defaults or {})

    def __init__(self, *args, name=None, **kwargs):
        Layer.__init__(self)
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}: too many arguments {args}")
        unknown = set(kwargs) - set(names)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected arguments {sorted(unknown)}")
        self._kw = dict(defaults, **dict(zip(names, args)), **kwargs)

    def forward(self, x):
        if training:
            return fn(x, training=self.training, **self._kw)
        return fn(x, **self._kw)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self._kw.items())
    return {"__init__": __init__, "forward": forward, "extra_repr": extra_repr, "__doc__": doc}


PixelShuffle = type("PixelShuffle", (Layer,), _calling(
    VF.pixel_shuffle, "`F.pixel_shuffle`", "upscale_factor", "data_format"))
PixelUnshuffle = type("PixelUnshuffle", (Layer,), _calling(
    VF.pixel_unshuffle, "`F.pixel_unshuffle`", "downscale_factor", "data_format"))
ChannelShuffle = type("ChannelShuffle", (Layer,), _calling(
    VF.channel_shuffle, "`F.channel_shuffle`", "groups", "data_format"))
LocalResponseNorm = type("LocalResponseNorm", (Layer,), _calling(
    VF.local_response_norm, "`F.local_response_norm`", "size", "alpha", "beta", "k",
    "data_format"))
ZeroPad2D = type("ZeroPad2D", (Layer,), _calling(
    VF.zeropad2d, "`F.zeropad2d`", "padding", "data_format"))


class Pad3D(_PadNd):
    """Pad D, H and W by [left, right, top, bottom, front, back]."""
    _n = 3
    _formats = ("NCDHW", "NDHWC")


Dropout2D = type("Dropout2D", (Layer,), _calling(
    VF.dropout2d, "`F.dropout2d` while training, the identity in eval mode", "p",
    "data_format", training=True))
Dropout3D = type("Dropout3D", (Layer,), _calling(
    VF.dropout3d, "`F.dropout3d` while training, the identity in eval mode", "p",
    "data_format", training=True))
AlphaDropout = type("AlphaDropout", (Layer,), _calling(
    VF.alpha_dropout, "`F.alpha_dropout` while training, the identity in eval mode", "p",
    training=True))
AdaptiveAvgPool3D = type("AdaptiveAvgPool3D", (Layer,), _calling(
    VF.adaptive_avg_pool3d, "`F.adaptive_avg_pool3d`", "output_size", "data_format"))
