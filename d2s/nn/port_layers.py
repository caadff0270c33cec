"""Layers of the API that ported models call beyond the first target list
(issue 25): thin Layers around the functions of `patch_functional`,
`vision_functional`, `activation_more`, `loss_more` and `ctc`, with
PaddlePaddle's constructor arguments."""
from __future__ import annotations

from . import patch_functional as PF
from . import vision_functional as VF
from . import activation_more as AM
from . import loss_more as LM
from .ctc import ctc_loss
from .conv_layers import _PadNd
from .layer import Layer
from .norm import _BatchNormBase
from .spectral_norm import SpectralNorm

__all__ = ["Unfold", "Fold", "MaxUnPool1D", "MaxUnPool2D", "MaxUnPool3D", "AdaptiveMaxPool1D", "AdaptiveMaxPool2D",
           "AdaptiveMaxPool3D",
           "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "LocalResponseNorm", "ZeroPad2D",
           "Pad3D", "Dropout2D", "Dropout3D", "AlphaDropout", "AdaptiveAvgPool3D",
           "GLU", "Softmin", "Maxout", "RReLU", "Softmax2D", "PairwiseDistance",
           "CosineSimilarity", "CTCLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
           "MultiLabelSoftMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss", "MultiMarginLoss",
           "TripletMarginWithDistanceLoss", "Unflatten", "BatchNorm3D", "ParameterDict", "SpectralNorm"]


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


class _MaxUnPool(Layer):
    """`F.max_unpoolNd`: values written back at a max pool's mask."""
    _fn = None
    _format = None

    def __init__(self, kernel_size, stride=None, padding=0, data_format=None,
                 output_size=None, name=None):
        super().__init__()
        self._args = (kernel_size, stride, padding, data_format or self._format, output_size)

    def forward(self, x, indices):
        return type(self)._fn(x, indices, *self._args)


class MaxUnPool1D(_MaxUnPool):
    _fn = staticmethod(PF.max_unpool1d)
    _format = "NCL"


class MaxUnPool2D(_MaxUnPool):
    _fn = staticmethod(PF.max_unpool2d)
    _format = "NCHW"


class MaxUnPool3D(_MaxUnPool):
    _fn = staticmethod(PF.max_unpool3d)
    _format = "NCDHW"


class AdaptiveMaxPool2D(Layer):
    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        self._output_size, self._return_mask = output_size, return_mask

    def forward(self, x):
        return PF.adaptive_max_pool2d(x, self._output_size, self._return_mask)


class AdaptiveMaxPool3D(Layer):
    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        self._output_size, self._return_mask = output_size, return_mask

    def forward(self, x):
        return PF.adaptive_max_pool3d(x, self._output_size, self._return_mask)


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

GLU = type("GLU", (Layer,), _calling(AM.glu, "`F.glu`", "axis"))
Softmin = type("Softmin", (Layer,), _calling(AM.softmin, "`F.softmin`", "axis"))
Maxout = type("Maxout", (Layer,), _calling(AM.maxout, "`F.maxout`", "groups", "axis"))
RReLU = type("RReLU", (Layer,), _calling(
    AM.rrelu, "`F.rrelu`: random slopes while training, their mean in eval mode", "lower",
    "upper", training=True))


class Softmax2D(Layer):
    """Softmax over the channels (dim -3) of (C, H, W) or (N, C, H, W) inputs."""

    def forward(self, x):
        from ..core.ops import softmax
        if len(x.shape) not in (3, 4):
            raise ValueError(f"Softmax2D: expects a 3-D or 4-D input, got shape "
                             f"{list(x.shape)}")
        return softmax(x, axis=-3)


class _Pair(Layer):
    """A Layer calling `fn(x, y, *constructor arguments)`."""
    _fn = None

    def forward(self, x, y):
        return type(self)._fn(x, y, *self._args)


class PairwiseDistance(_Pair):
    """`F.pairwise_distance`."""
    _fn = staticmethod(LM.pairwise_distance)

    def __init__(self, p=2.0, epsilon=1e-6, keepdim=False, name=None):
        super().__init__()
        self._args = (p, epsilon, keepdim)


class CosineSimilarity(_Pair):
    """`F.cosine_similarity` along `axis`."""

    def __init__(self, axis=1, eps=1e-8):
        super().__init__()
        self._args = (axis, eps)

    @staticmethod
    def _fn(x, y, axis, eps):
        from .common_functional import cosine_similarity
        return cosine_similarity(x, y, axis, eps)


class CTCLoss(Layer):
    """`F.ctc_loss` (log_probs [T, B, C] unscaled scores, padded labels [B, L])."""

    def __init__(self, blank=0, reduction="mean"):
        super().__init__()
        self.blank, self.reduction = blank, reduction

    def forward(self, log_probs, labels, input_lengths, label_lengths, norm_by_times=False):
        return ctc_loss(log_probs, labels, input_lengths, label_lengths, self.blank,
                        self.reduction, norm_by_times)


class _Loss(Layer):
    """A loss Layer: `fn(*inputs, **its constructor arguments)`."""
    _fn = None
    _names = ()

    def __init__(self, *args, name=None, **kwargs):
        super().__init__()
        if len(args) > len(self._names):
            raise TypeError(f"{type(self).__name__}: too many arguments {args}")
        self._kw = dict(zip(self._names, args), **kwargs)

    def forward(self, *inputs):
        return type(self)._fn(*inputs, **self._kw)


def _loss(name, fn, *names):
    return type(name, (_Loss,), {"_fn": staticmethod(fn), "_names": names,
                                 "__doc__": f"`F.{fn.__name__}` as a Layer."})


CosineEmbeddingLoss = _loss("CosineEmbeddingLoss", LM.cosine_embedding_loss, "margin",
                            "reduction")
TripletMarginLoss = _loss("TripletMarginLoss", LM.triplet_margin_loss, "margin", "p",
                          "epsilon", "swap", "reduction")
MultiLabelSoftMarginLoss = _loss("MultiLabelSoftMarginLoss", LM.multi_label_soft_margin_loss,
                                 "weight", "reduction")
PoissonNLLLoss = _loss("PoissonNLLLoss", LM.poisson_nll_loss, "log_input", "full", "epsilon",
                       "reduction")
GaussianNLLLoss = _loss("GaussianNLLLoss", LM.gaussian_nll_loss, "full", "epsilon",
                        "reduction")
TripletMarginWithDistanceLoss = _loss("TripletMarginWithDistanceLoss",
                                      LM.triplet_margin_with_distance_loss, "distance_function",
                                      "margin", "swap", "reduction")
MultiMarginLoss = _loss("MultiMarginLoss", LM.multi_margin_loss, "p", "margin", "weight",
                        "reduction")


class Unflatten(Layer):
    """Dim `axis` split into `shape` (a list or tuple; one entry may be -1)."""

    def __init__(self, axis, shape, name=None):
        super().__init__()
        if hasattr(shape, "numpy"):
            shape = shape.numpy().tolist()
        if not isinstance(shape, (list, tuple)) or not shape:
            raise TypeError(f"Unflatten: shape must be a non-empty list or tuple, got {shape!r}")
        self._axis, self._shape = int(axis), [int(d) for d in shape]

    def forward(self, x):
        from ..core.ops import reshape
        from ..core.shapes import normalize_axis
        axis = normalize_axis(self._axis, len(x.shape), "Unflatten")
        dims = VF._dims(x)
        return reshape(x, dims[:axis] + self._shape + dims[axis + 1:])

    def extra_repr(self):
        return f"axis={self._axis}, shape={self._shape}"


class BatchNorm3D(_BatchNormBase):
    """Batch normalization of (N, C, D, H, W) inputs (`data_format` "NCDHW" or "NDHWC")."""
    _NDIMS = (5,)
    _FORMATS = ("NCDHW", "NDHWC")

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format="NCDHW", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format,
                         use_global_stats, name)


class ParameterDict(Layer):
    """Parameters by string key, registered on the layer (so in `parameters()`
    and `state_dict()`); a dict's reading methods."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, param):
        from ..core.tensor import Tensor
        if not isinstance(param, Tensor):
            raise TypeError(f"ParameterDict: {key!r} must be a Tensor, got "
                            f"{type(param).__name__}")
        self.add_parameter(key, param)

    def __delitem__(self, key):
        delattr(self, key)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(list(self._parameters))

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return list(self._parameters.keys())

    def values(self):
        return list(self._parameters.values())

    def items(self):
        return list(self._parameters.items())

    def update(self, parameters):
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for key, param in items:
            self[key] = param
