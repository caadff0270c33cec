"""Parameter initializers: callables `init(shape, dtype) -> Tensor`.

Random ones draw through the core random ops (`d2s.uniform`, `d2s.normal`),
so `d2s.seed(s)` makes a model's initial weights reproducible. Parameters
are eager Tensors even when a layer is built while a program is being
built, so every draw runs eagerly (`eager_guard`).
"""
from __future__ import annotations

import math

from ..core.state import eager_guard
from ..core.ops import clip, full, normal, uniform
from ..core.tensor import Tensor

__all__ = ["Initializer", "Constant", "Uniform", "Normal", "XavierUniform", "KaimingUniform",
           "eager_guard"]  # eager_guard re-exported from d2s.core.state


def compute_fans(shape):
    """(fan_in, fan_out): (in, out) for a 2-D weight; conv-style (out, in, *k) otherwise."""
    shape = tuple(shape)
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


class Initializer:
    def __call__(self, shape, dtype="float32"):
        """A new Tensor of `shape`; or, given a parameter (Paddle's `init(param)`,
        as `_initialize_weights` loops write it), fills it in place and returns it."""
        if isinstance(shape, Tensor):
            param = shape
            with eager_guard():
                param.set_value(self._draw(list(param.shape), param.dtype))
            return param
        with eager_guard():
            return self._draw(list(shape), dtype)

    def _draw(self, shape, dtype):  # pragma: no cover - abstract
        raise NotImplementedError


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def _draw(self, shape, dtype):
        return full(shape, self.value, dtype=dtype)


class Uniform(Initializer):
    def __init__(self, low=-1.0, high=1.0):
        self.low, self.high = low, high

    def _draw(self, shape, dtype):
        return uniform(shape, dtype=dtype, min=self.low, max=self.high)


class Normal(Initializer):
    def __init__(self, mean=0.0, std=1.0):
        self.mean, self.std = mean, std

    def _draw(self, shape, dtype):
        return normal(shape, mean=self.mean, std=self.std, dtype=dtype)


class XavierUniform(Initializer):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, fan_in=None, fan_out=None, gain=1.0):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def _draw(self, shape, dtype):
        fi, fo = compute_fans(shape)
        fi = self.fan_in if self.fan_in is not None else fi
        fo = self.fan_out if self.fan_out is not None else fo
        a = self.gain * math.sqrt(6.0 / (fi + fo))
        return uniform(shape, dtype=dtype, min=-a, max=a)


class KaimingUniform(Initializer):
    """U(-a, a) with a = sqrt(6 / ((1 + negative_slope ** 2) * fan_in)) (ReLU gain)."""

    def __init__(self, fan_in=None, negative_slope=0.0):
        self.fan_in, self.negative_slope = fan_in, negative_slope

    def _draw(self, shape, dtype):
        fi = self.fan_in if self.fan_in is not None else compute_fans(shape)[0]
        a = math.sqrt(6.0 / ((1.0 + self.negative_slope ** 2) * fi))
        return uniform(shape, dtype=dtype, min=-a, max=a)


# ---- more of Paddle's initializers ------------------------------------------------------------
class TruncatedNormal(Initializer):
    """Normal(mean, std) restricted to [mean + a * std, mean + b * std] (Paddle's
    default: two standard deviations); draws outside are drawn again."""

    def __init__(self, mean=0.0, std=1.0, a=-2.0, b=2.0):
        self.mean, self.std, self.a, self.b = mean, std, a, b

    def _draw(self, shape, dtype):
        from ..core.ops import logical_and, where
        lo, hi = self.mean + self.a * self.std, self.mean + self.b * self.std
        out = normal(shape, mean=self.mean, std=self.std, dtype=dtype)
        for _ in range(64):  # each round keeps >= 95% of what it redraws
            inside = logical_and(out >= lo, out <= hi)
            if bool(inside.numpy().all()):
                return out
            out = where(inside, out, normal(shape, mean=self.mean, std=self.std, dtype=dtype))
        return clip(out, lo, hi)


class XavierNormal(Initializer):
    """Normal(0, gain * sqrt(2 / (fan_in + fan_out)))."""

    def __init__(self, fan_in=None, fan_out=None, gain=1.0):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def _draw(self, shape, dtype):
        fi, fo = compute_fans(shape)
        fi = self.fan_in if self.fan_in is not None else fi
        fo = self.fan_out if self.fan_out is not None else fo
        return normal(shape, mean=0.0, std=self.gain * math.sqrt(2.0 / (fi + fo)), dtype=dtype)


def calculate_gain(nonlinearity, param=None):
    """Paddle's / PyTorch's recommended gains."""
    if nonlinearity in ("sigmoid", "linear", "conv1d", "conv2d", "conv3d", "conv1d_transpose",
                        "conv2d_transpose", "conv3d_transpose"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unknown nonlinearity {nonlinearity!r}")


class KaimingNormal(Initializer):
    """Normal(0, gain / sqrt(fan_in)) with the ReLU-family gain."""

    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu"):
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, negative_slope, nonlinearity

    def _draw(self, shape, dtype):
        fi = self.fan_in if self.fan_in is not None else compute_fans(shape)[0]
        gain = calculate_gain(self.nonlinearity, self.negative_slope)
        return normal(shape, mean=0.0, std=gain / math.sqrt(fi), dtype=dtype)


class Assign(Initializer):
    """The given values (a list, array or Tensor) of exactly the parameter's shape."""

    def __init__(self, value, name=None):
        self.value = value

    def _draw(self, shape, dtype):
        import numpy as np
        from ..core.tensor import Tensor
        v = self.value._value if isinstance(self.value, Tensor) else self.value
        arr = np.asarray(v, dtype=dtype)
        if list(arr.shape) != list(shape):
            raise ValueError(f"initializer.Assign: value of shape {list(arr.shape)} does not "
                             f"match the parameter's shape {list(shape)}")
        return Tensor(arr.copy())


__all__ += ["TruncatedNormal", "XavierNormal", "KaimingNormal", "Assign", "calculate_gain"]


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times `gain`, the weight seen as
    `shape[0]` rows of `prod(shape[1:])` columns (Saxe et al.): the Q of a
    Gaussian matrix's QR, its columns' signs fixed by R's diagonal so the
    result is uniform over orthogonal matrices."""

    def __init__(self, gain=1.0, name=None):
        self.gain = float(gain)

    def _draw(self, shape, dtype):
        import numpy as np
        from ..core.tensor import Tensor
        if len(shape) < 2:
            raise ValueError(f"initializer.Orthogonal: the parameter must have at least 2 "
                             f"dims, got shape {list(shape)}")
        rows, cols = shape[0], math.prod(shape[1:])
        flat = normal([max(rows, cols), min(rows, cols)], mean=0.0, std=1.0,
                      dtype="float64").numpy()
        q, r = np.linalg.qr(flat)
        q = q * np.sign(np.where(np.diag(r) == 0, 1.0, np.diag(r)))
        if rows < cols:
            q = q.T
        return Tensor((self.gain * q).reshape(shape).astype(dtype))


class Dirac(Initializer):
    """A convolution weight (out, in, *kernel; 3 to 5 dims) that passes its
    input through: ones at the kernel's centre linking output channel `i` of
    each of `groups` groups to input channel `i`, zeros elsewhere."""

    def __init__(self, groups=1, name=None):
        if isinstance(groups, bool) or int(groups) != groups or groups <= 0:
            raise ValueError(f"initializer.Dirac: groups must be a positive int, got {groups!r}")
        self.groups = int(groups)

    def _draw(self, shape, dtype):
        import numpy as np
        from ..core.tensor import Tensor
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"initializer.Dirac: the parameter must have 3, 4 or 5 dims "
                             f"(a convolution weight), got shape {list(shape)}")
        if shape[0] % self.groups:
            raise ValueError(f"initializer.Dirac: out channels {shape[0]} are not divisible "
                             f"by groups={self.groups}")
        out = np.zeros(shape, dtype)
        per = shape[0] // self.groups
        centre = tuple(k // 2 for k in shape[2:])
        for g in range(self.groups):
            for i in range(min(per, shape[1])):
                out[(g * per + i, i) + centre] = 1
        return Tensor(out)


class Bilinear(Initializer):
    """Bilinear-interpolation kernels for a transposed convolution that
    upsamples (weight (C_out, C_in, K, K)): every filter is the separable
    tent `(1 - |x / f - c|) (1 - |y / f - c|)`, `f = ceil(K / 2)`."""

    def __init__(self, name=None):
        pass

    def _draw(self, shape, dtype):
        import numpy as np
        from ..core.tensor import Tensor
        if len(shape) != 4 or shape[2] != shape[3]:
            raise ValueError(f"initializer.Bilinear: the parameter must be 4-D with square "
                             f"kernels (C_out, C_in, K, K), got shape {list(shape)}")
        size = shape[3]
        f = math.ceil(size / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        tent = 1 - np.abs(np.arange(size) / f - c)
        kernel = tent[:, None] * tent[None, :]
        return Tensor(np.broadcast_to(kernel, shape).astype(dtype))


_GLOBAL = {"weight": None, "bias": None}


def set_global_initializer(weight_init, bias_init=None):
    """Initializers for every parameter made from now on (weights, biases)
    in place of the layers' defaults; an initializer given through a
    ParamAttr / weight_attr still wins. `set_global_initializer(None)`
    restores the defaults."""
    for what, v in (("weight_init", weight_init), ("bias_init", bias_init)):
        if v is not None and not isinstance(v, Initializer):
            raise TypeError(f"set_global_initializer: {what} must be an Initializer or None, "
                            f"got {type(v).__name__}")
    _GLOBAL["weight"], _GLOBAL["bias"] = weight_init, bias_init


def global_initializer(is_bias):
    """The initializer `set_global_initializer` gave for weights or biases, or None."""
    return _GLOBAL["bias" if is_bias else "weight"]


__all__ += ["Orthogonal", "Dirac", "Bilinear", "set_global_initializer"]
