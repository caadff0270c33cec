"""Batch normalization: `BatchNorm`, `BatchNorm1D`, `BatchNorm2D` and the
functional `batch_norm`, with PaddlePaddle's signatures and names.

The running statistics are buffers (`_mean`, `_variance`, as PaddlePaddle
names them), updated in place in training mode:

    _mean     = _mean * momentum + batch_mean * (1 - momentum)
    _variance = _variance * momentum + batch_var * (1 - momentum)

`batch_var` is the biased batch variance (divided by the number of values
per channel), as PaddlePaddle's documentation gives it; PyTorch's
`BatchNorm2d` accumulates the unbiased one instead and writes its momentum
as `1 - momentum`. The statistics are computed detached: they never carry a
gradient.

In a function converted by `to_static` the update is a write that outlives
the call (jit.outliving): the program computes the new statistics and each
successful run writes them into the same buffers, so a model trains and
evaluates as eagerly across `train()` / `eval()` switches.
"""
from __future__ import annotations

import numpy as np

from ..core import effects
from ..core.ops import batch_normalize, detach, reshape, sqrt
from ..core.ops._base import lift
from ..core.tensor import Tensor
from . import initializer as init
from .layer import Layer
from .layers import _attr

__all__ = ["BatchNorm", "BatchNorm1D", "BatchNorm2D", "batch_norm"]

_CHANNEL_FIRST = ("NC", "NCL", "NCHW", "NCDHW")
_CHANNEL_LAST = ("NLC", "NHWC", "NDHWC")


def _channel_axis(ndim, data_format):
    if data_format in _CHANNEL_LAST:
        return ndim - 1
    if data_format in _CHANNEL_FIRST:
        return 1 if ndim > 1 else 0
    raise ValueError(f"batch_norm: data_format must be one of "
                     f"{list(_CHANNEL_FIRST + _CHANNEL_LAST)}, got {data_format!r}")


def _assign(tensor, value):
    """`tensor` holds `value` from now on, in place: at once eagerly; while
    `to_static` traces, through the trace's state overlay (the program's
    run writes it, jit.outliving)."""
    if not isinstance(tensor, Tensor):
        raise TypeError("batch_norm: running_mean and running_var must be eager Tensors "
                        f"(buffers), got {type(tensor).__name__}")
    overlay = effects.overlay()
    if overlay is not None:
        overlay.assign(tensor, value)
    elif isinstance(value, Tensor):
        tensor._value = value._value
    else:
        raise RuntimeError(
            "batch_norm in training mode inside a static program built by hand "
            "(program_guard): its running statistics cannot be updated there; convert the "
            "function with to_static, or pass training=False (or use_global_stats=True)")


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.9, epsilon=1e-05, data_format="NCHW", use_global_stats=None,
               name=None):
    """Normalize `x` per channel. In training (and unless `use_global_stats`)
    with the batch's mean and biased variance, updating `running_mean` and
    `running_var` in place (see the module doc); otherwise with the running
    statistics. `weight` / `bias` (per channel) scale and shift."""
    return _batch_norm(x, running_mean, running_var, weight, bias, training, momentum,
                       epsilon, data_format, use_global_stats)


def _batch_norm(x, running_mean, running_var, weight, bias, training, momentum, epsilon,
                data_format, use_global_stats, mean_of=None):
    """`batch_norm`; `mean_of(v, axes)` given: the batch statistics are means
    it takes (the global batch's, SyncBatchNorm), composed of ops, instead of
    this process's batch in the one `batch_normalize` op."""
    x = lift(x)
    ndim = len(x.shape)
    if ndim < 2:
        raise ValueError(f"batch_norm: input must have at least 2 dims (N, C, ...), got shape "
                         f"{list(x.shape)}")
    axis = _channel_axis(ndim, data_format)
    channels = x.shape[axis]
    axes = tuple(i for i in range(ndim) if i != axis)
    shape = [1] * ndim
    shape[axis] = -1 if channels is None else channels
    global_stats = (not training) if use_global_stats is None else bool(use_global_stats)
    if global_stats:
        y = (x - reshape(running_mean, shape)) / sqrt(reshape(running_var, shape) + epsilon)
    else:
        if mean_of is None:
            # one op (core.ops.norm_ops): its gradient is the closed form
            y, mu, var = batch_normalize(x, axes, epsilon)
        else:
            mu = mean_of(x, axes)
            centered = x - mu
            var = mean_of(centered * centered, axes)
            y = centered / sqrt(var + epsilon)
        if training:
            m = float(momentum)
            batch_mean = reshape(detach(mu), [-1])
            batch_var = reshape(detach(var), [-1])
            _assign(running_mean, running_mean * m + batch_mean * (1.0 - m))
            _assign(running_var, running_var * m + batch_var * (1.0 - m))
    if weight is not None:
        y = y * reshape(weight, shape)
    if bias is not None:
        y = y + reshape(bias, shape)
    return y


class _BatchNormBase(Layer):
    _NDIMS = None      # the input ranks accepted (None: any of 2 to 5)
    _FORMATS = _CHANNEL_FIRST + _CHANNEL_LAST

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format="NCHW", use_global_stats=None, name=None,
                 dtype="float32"):
        super().__init__(name, dtype)
        if data_format not in self._FORMATS:
            raise ValueError(f"{type(self).__name__}: data_format must be one of "
                             f"{list(self._FORMATS)}, got {data_format!r}")
        self._num_features = int(num_features)
        self._momentum = float(momentum)
        self._epsilon = float(epsilon)
        self._data_format = data_format
        self._use_global_stats = use_global_stats
        c = [self._num_features]
        # a ParamAttr (its name, initializer, learning rate), an initializer, or
        # False: no parameter (scale 1, shift 0)
        self.weight = self.create_parameter(c, attr=_attr(weight_attr),
                                            default_initializer=init.Constant(1.0))
        self.bias = self.create_parameter(c, attr=_attr(bias_attr), is_bias=True,
                                          default_initializer=init.Constant(0.0))
        self.register_buffer("_mean", Tensor(np.zeros(c, dtype=self._dtype)))
        self.register_buffer("_variance", Tensor(np.ones(c, dtype=self._dtype)))

    def forward(self, x):
        if self._NDIMS is not None and len(x.shape) not in self._NDIMS:
            raise ValueError(f"{type(self).__name__}: expected an input of rank "
                             f"{' or '.join(map(str, self._NDIMS))}, got shape {list(x.shape)}")
        return batch_norm(x, self._mean, self._variance, self.weight, self.bias,
                          training=self.training, momentum=self._momentum,
                          epsilon=self._epsilon, data_format=self._data_format,
                          use_global_stats=self._use_global_stats)

    def extra_repr(self):
        return (f"num_features={self._num_features}, momentum={self._momentum}, "
                f"epsilon={self._epsilon}, data_format={self._data_format}")


class BatchNorm(_BatchNormBase):
    """Batch normalization over the channel axis of a 2-D to 5-D input.

    PaddlePaddle's `nn.BatchNorm` keeps the signature of its first dygraph
    API, which model code ported from PaddlePaddle calls (`BatchNorm(c,
    act="relu", param_attr=..., moving_mean_name=...)`): `act` names an
    activation applied to the output; `param_attr` / `data_layout` are
    `weight_attr` / `data_format`; `is_test`, `in_place`, the moving
    statistics' names and `do_model_average_for_mean_and_var` do not change
    what a forward computes (the layer's `training` flag picks batch or
    running statistics, as there). The newer keywords are accepted too.
    """

    def __init__(self, num_channels, act=None, is_test=False, momentum=0.9, epsilon=1e-05,
                 param_attr=None, bias_attr=None, dtype="float32", data_layout="NCHW",
                 in_place=False, moving_mean_name=None, moving_variance_name=None,
                 do_model_average_for_mean_and_var=True, use_global_stats=False,
                 trainable_statistics=False, weight_attr=None, data_format=None, name=None):
        if trainable_statistics:
            raise NotImplementedError(
                "BatchNorm: trainable_statistics=True (batch statistics in eval mode) is not "
                "supported; leave it False and call train() while the statistics should move")
        if act is not None and _ACTIVATIONS.get(act) is None:
            raise ValueError(f"BatchNorm: unknown act {act!r}; one of {sorted(_ACTIVATIONS)}")
        super().__init__(num_channels, momentum, epsilon,
                         param_attr if weight_attr is None else weight_attr, bias_attr,
                         data_layout if data_format is None else data_format,
                         True if use_global_stats else None, name, dtype)
        self._act = act
        self._is_test = is_test

    def forward(self, x):
        y = super().forward(x)
        return y if self._act is None else _ACTIVATIONS[self._act](y)


def _leaky_relu_op_default(x):
    """PaddlePaddle's activation op `leaky_relu` (what act="leaky_relu" runs)
    has a default slope of 0.02, not the functional API's 0.01."""
    from .functional import leaky_relu
    return leaky_relu(x, 0.02)


def _functional(name):
    def act(x):
        from . import functional
        return getattr(functional, name)(x)
    act.__name__ = name
    return act


_ACTIVATIONS = {name: _functional(name) for name in (
    "relu", "relu6", "sigmoid", "tanh", "elu", "gelu", "swish", "silu", "hardswish",
    "hardsigmoid", "softplus", "softsign", "mish", "log_sigmoid", "tanhshrink")}
_ACTIVATIONS["hard_swish"] = _ACTIVATIONS["hardswish"]
_ACTIVATIONS["hard_sigmoid"] = _ACTIVATIONS["hardsigmoid"]
_ACTIVATIONS["leaky_relu"] = _leaky_relu_op_default


class BatchNorm1D(_BatchNormBase):
    """Batch normalization of (N, C) or (N, C, L) inputs (`data_format` "NCL" or "NLC")."""
    _NDIMS = (2, 3)
    _FORMATS = ("NC", "NCL", "NLC")

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format="NCL", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format,
                         use_global_stats, name)


class BatchNorm2D(_BatchNormBase):
    """Batch normalization of (N, C, H, W) inputs (`data_format` "NCHW" or "NHWC")."""
    _NDIMS = (4,)
    _FORMATS = ("NCHW", "NHWC")
