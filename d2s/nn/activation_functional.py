"""Activation functions of `d2s.nn.functional` (Paddle's signatures and defaults).

Each is an exact composition of registered elementwise ops, so it runs in
every mode and backend and is differentiated by those ops' rules. Forms that
would overflow in a branch `where` discards (exp of a large input) take the
branch's input clamped first: a discarded inf would make the gradient NaN.
"""
from __future__ import annotations

from ..core.ops import (abs as _abs, exp, minimum, reshape, softplus as _softplus,
                        sigmoid as _sigmoid, tanh as _tanh, where)
from ..core.ops._base import lift

__all__ = ["silu", "swish", "hardswish", "hardsigmoid", "hardtanh", "leaky_relu", "elu", "selu",
           "celu", "softplus", "softsign", "mish", "relu6", "prelu", "log_sigmoid",
           "tanhshrink", "softshrink", "hardshrink", "thresholded_relu"]


def silu(x, name=None):
    """`x * sigmoid(x)`."""
    x = lift(x)
    return x * _sigmoid(x)


def swish(x, name=None):
    """Paddle's swish: the same function as `silu`."""
    return silu(x)


def _clamp(x, lo, hi):
    """clip(x, lo, hi) whose gradient is 1 strictly inside (lo, hi) only (Paddle's and
    PyTorch's rule for these activations; `clip`'s counts the bounds as inside)."""
    return where(x <= lo, x * 0.0 + lo, where(x >= hi, x * 0.0 + hi, x))


def relu6(x, name=None):
    return _clamp(lift(x), 0.0, 6.0)


def hardswish(x, name=None):
    """`x * relu6(x + 3) / 6`: 0 up to -3, `x` from 3."""
    x = lift(x)
    return where(x <= -3.0, x * 0.0, where(x >= 3.0, x, x * (x + 3.0) * (1.0 / 6.0)))


def hardsigmoid(x, slope=0.1666667, offset=0.5, name=None):
    """`clip(slope * x + offset, 0, 1)` (Paddle's default slope, not 1/6 exactly)."""
    return _clamp(lift(x) * slope + offset, 0.0, 1.0)


def hardtanh(x, min=-1.0, max=1.0, name=None):
    return _clamp(lift(x), min, max)


def leaky_relu(x, negative_slope=0.01, name=None):
    x = lift(x)
    return where(x > 0, x, x * negative_slope)


def _expm1_neg(x):
    """exp(min(x, 0)) - 1: the negative branch, never overflowing."""
    return exp(minimum(x, 0.0)) - 1.0


def elu(x, alpha=1.0, name=None):
    x = lift(x)
    return where(x > 0, x, _expm1_neg(x) * alpha)


def celu(x, alpha=1.0, name=None):
    x = lift(x)
    return where(x > 0, x, _expm1_neg(x * (1.0 / alpha)) * alpha)


def selu(x, scale=1.0507009873554804934193349852946,
         alpha=1.6732632423543772848170429916717, name=None):
    x = lift(x)
    return where(x > 0, x, _expm1_neg(x) * alpha) * scale


def softplus(x, beta=1.0, threshold=20.0, name=None):
    """`log(1 + exp(beta * x)) / beta`, and `x` itself where `beta * x > threshold`."""
    x = lift(x)
    z = x * beta
    soft = _softplus(z) if beta == 1 else _softplus(z) * (1.0 / beta)
    return where(z > threshold, x, soft)


def softsign(x, name=None):
    x = lift(x)
    return x / (_abs(x) + 1.0)


def mish(x, name=None):
    """`x * tanh(softplus(x))`."""
    x = lift(x)
    return x * _tanh(softplus(x))


def log_sigmoid(x, name=None):
    """`-softplus(-x)`, stable."""
    return -_softplus(-lift(x))


def tanhshrink(x, name=None):
    x = lift(x)
    return x - _tanh(x)


def softshrink(x, threshold=0.5, name=None):
    x = lift(x)
    return where(x > threshold, x - threshold, where(x < -threshold, x + threshold, x * 0.0))


def hardshrink(x, threshold=0.5, name=None):
    x = lift(x)
    return where(_abs(x) > threshold, x, x * 0.0)


def thresholded_relu(x, threshold=1.0, name=None):
    x = lift(x)
    return where(x > threshold, x, x * 0.0)


def prelu(x, weight, data_format="NCHW", name=None):
    """`x` where positive, `weight * x` elsewhere; `weight` holds one slope, or one per
    channel (axis 1, or the last axis for channel-last layouts)."""
    x, weight = lift(x), lift(weight)
    if data_format not in ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
        raise ValueError(f"prelu: unknown data_format {data_format!r}")
    n = weight.shape[0] if len(weight.shape) == 1 else None
    if len(weight.shape) != 1:
        raise ValueError(f"prelu: weight must be 1-D, got shape {list(weight.shape)}")
    if n != 1:
        axis = len(x.shape) - 1 if data_format[-1] == "C" and data_format != "NC" else 1
        if len(x.shape) < 2 or (x.shape[axis] is not None and x.shape[axis] != n):
            raise ValueError(f"prelu: weight has {n} slopes but the input's channel dim "
                             f"(axis {axis}) of shape {list(x.shape)} does not match")
        shape = [1] * len(x.shape)
        shape[axis] = n
        weight = reshape(weight, shape)
    return where(x > 0, x, x * weight)
