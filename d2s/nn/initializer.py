"""Parameter initializers: callables `init(shape, dtype) -> Tensor`.

Random ones draw through the core random ops (`d2s.uniform`, `d2s.normal`),
so `d2s.seed(s)` makes a model's initial weights reproducible. Parameters
are eager Tensors even when a layer is built while a program is being
built, so every draw runs eagerly (`eager_guard`).
"""
from __future__ import annotations

import math

from ..core.state import eager_guard
from ..core.ops import full, normal, uniform

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
