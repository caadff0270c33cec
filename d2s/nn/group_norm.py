"""Group and instance normalization: `GroupNorm`, `InstanceNorm1D/2D/3D` and the
functional `group_norm` / `instance_norm`, with PaddlePaddle's signatures and
parameter names (`GroupNorm.weight`/`bias`; `InstanceNorm*.scale`/`bias`).

Both normalize each sample by statistics of its own values (a group of
channels, or one channel), so unlike BatchNorm they keep no running state
and behave the same in `train()` and `eval()`. They are composed of d2s's
reductions and elementwise ops: every backend, the ONNX exporter and the
gradient rules come with those ops, and a `None` batch or spatial dim works.
The variance is the biased one (divided by the number of values), as in
PaddlePaddle and PyTorch.
"""
from __future__ import annotations

from ..core.ops import mean, reshape, shape, sqrt
from ..core.ops._base import lift
from . import initializer as init
from .layer import Layer

__all__ = ["GroupNorm", "InstanceNorm1D", "InstanceNorm2D", "InstanceNorm3D", "group_norm",
           "instance_norm"]

_CHANNEL_LAST = ("NLC", "NHWC", "NDHWC")


def _attr(attr):
    return None if attr is True else attr


def _channels_first(x, data_format, where):
    """`x` with its channels on axis 1 (a transpose for channel-last formats), and
    the permutation that undoes it (None when there was none)."""
    if data_format in _CHANNEL_LAST:
        nd = len(x.shape)
        perm = [0, nd - 1] + list(range(1, nd - 1))
        back = [0] + list(range(2, nd)) + [1]
        return x.transpose(perm), back
    if data_format not in ("NC", "NCL", "NCHW", "NCDHW"):
        raise ValueError(f"{where}: unknown data_format {data_format!r}")
    return x, None


def _dims(x):
    """`x`'s shape as a list for `reshape`: known dims as ints, unknown ones (a
    `None` batch or spatial dim of a program) as int64 scalars read at run time."""
    dims = list(x.shape)
    if all(isinstance(d, int) for d in dims):
        return dims
    runtime = shape(x)
    return [d if isinstance(d, int) else runtime[i] for i, d in enumerate(dims)]


def _normalize(x, axes, epsilon):
    mu = mean(x, axis=axes, keepdim=True)
    centered = x - mu
    var = mean(centered * centered, axis=axes, keepdim=True)
    return centered / sqrt(var + epsilon)


def _affine(y, weight, bias):
    """Per-channel scale and shift of a channel-first `y`."""
    shape = [1, -1] + [1] * (len(y.shape) - 2)
    if weight is not None:
        y = y * reshape(weight, shape)
    if bias is not None:
        y = y + reshape(bias, shape)
    return y


def group_norm(x, num_groups, epsilon=1e-05, weight=None, bias=None, data_format="NCHW",
               name=None):
    """Normalize each sample over groups of `C // num_groups` channels (and all
    spatial positions), then scale and shift per channel."""
    x = lift(x)
    if len(x.shape) < 2:
        raise ValueError(f"group_norm: the input needs a batch and a channel dim, got shape "
                         f"{list(x.shape)}")
    x, back = _channels_first(x, data_format, "group_norm")
    channels = x.shape[1]
    if not isinstance(channels, int):
        raise ValueError("group_norm: the channel dim must be known when the program is built")
    if num_groups <= 0 or channels % num_groups:
        raise ValueError(f"group_norm: num_groups ({num_groups}) must divide the number of "
                         f"channels ({channels})")
    full = _dims(x)
    grouped = reshape(x, [full[0], num_groups, -1])
    y = reshape(_normalize(grouped, (2,), epsilon), full)
    y = _affine(y, weight, bias)
    return y if back is None else y.transpose(back)


def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.9, eps=1e-05, data_format="NCHW", name=None):
    """Normalize each channel of each sample over its spatial positions, then scale
    and shift per channel. Running statistics are not kept (PaddlePaddle's
    layers keep none either): `use_input_stats=False` is refused."""
    if not use_input_stats or running_mean is not None or running_var is not None:
        raise NotImplementedError("instance_norm: only use_input_stats=True (statistics of "
                                  "each input, no running statistics) is supported")
    x = lift(x)
    if len(x.shape) < 3:
        raise ValueError(f"instance_norm: the input needs a batch, a channel and a spatial "
                         f"dim, got shape {list(x.shape)}")
    x, back = _channels_first(x, data_format, "instance_norm")
    y = _affine(_normalize(x, tuple(range(2, len(x.shape))), eps), weight, bias)
    return y if back is None else y.transpose(back)


class GroupNorm(Layer):
    """`paddle.nn.GroupNorm(num_groups, num_channels, epsilon, weight_attr, bias_attr,
    data_format)`: `weight` ones and `bias` zeros of shape (num_channels,), unless
    their attr is False."""

    def __init__(self, num_groups, num_channels, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format="NCHW", name=None):
        super().__init__(name)
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_groups ({num_groups}) must divide "
                             f"num_channels ({num_channels})")
        self._num_groups, self._num_channels = int(num_groups), int(num_channels)
        self._epsilon, self._data_format = epsilon, data_format
        self.weight = None if weight_attr is False else self.create_parameter(
            [num_channels], attr=_attr(weight_attr), default_initializer=init.Constant(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(
            [num_channels], attr=_attr(bias_attr), is_bias=True,
            default_initializer=init.Constant(0.0))

    def forward(self, x):
        return group_norm(x, self._num_groups, self._epsilon, self.weight, self.bias,
                          self._data_format)

    def extra_repr(self):
        return (f"num_groups={self._num_groups}, num_channels={self._num_channels}, "
                f"epsilon={self._epsilon}")


class _InstanceNorm(Layer):
    """`paddle.nn.InstanceNorm{1,2,3}D(num_features, epsilon, momentum, weight_attr,
    bias_attr, data_format)`: `scale` ones and `bias` zeros of shape
    (num_features,), unless their attr is False (PaddlePaddle's names)."""
    _ndim = None
    _default_format = None

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None,
                 bias_attr=None, data_format=None, name=None):
        super().__init__(name)
        self._num_features, self._epsilon = int(num_features), epsilon
        self._data_format = data_format or self._default_format
        self.scale = None if weight_attr is False else self.create_parameter(
            [num_features], attr=_attr(weight_attr), default_initializer=init.Constant(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(
            [num_features], attr=_attr(bias_attr), is_bias=True,
            default_initializer=init.Constant(0.0))

    def forward(self, x):
        if len(x.shape) != self._ndim:
            raise ValueError(f"{type(self).__name__}: expected a {self._ndim}-d input, got "
                             f"shape {list(x.shape)}")
        return instance_norm(x, weight=self.scale, bias=self.bias, eps=self._epsilon,
                             data_format=self._data_format)

    def extra_repr(self):
        return f"num_features={self._num_features}, epsilon={self._epsilon}"


class InstanceNorm1D(_InstanceNorm):
    _ndim, _default_format = 3, "NCL"


class InstanceNorm2D(_InstanceNorm):
    _ndim, _default_format = 4, "NCHW"


class InstanceNorm3D(_InstanceNorm):
    _ndim, _default_format = 5, "NCDHW"
