"""Paddle's in-place activations of `d2s.nn.functional`: `F.relu_(x)`,
`F.elu_`, `F.leaky_relu_`, `F.hardtanh_`, `F.softmax_`, `F.tanh_`,
`F.thresholded_relu_`.

Each is its functional activation written into `x` the way the Tensor
in-place methods are (core.inplace.method): eagerly `x` keeps its identity,
takes the new value, its version goes up and gradients flow through the
write; in converted code the converter rebinds the argument's name to the
result (transformers.inplace_methods.ACTIVATION_INPLACE_NAMES, which a test
keeps equal to `__all__`).
"""
from __future__ import annotations

from ..core import inplace
from . import activation_functional as _act
from ..core.ops import relu as _relu, softmax as _softmax, tanh as _tanh, cast as _cast

__all__ = ["relu_", "elu_", "leaky_relu_", "hardtanh_", "softmax_", "tanh_",
           "thresholded_relu_"]


def relu_(x, name=None):
    """In place: `x` becomes `relu(x)`."""
    return inplace.method(x, "relu_", _relu)


def elu_(x, alpha=1.0, name=None):
    """In place: `x` becomes `elu(x, alpha)`; `alpha` must be >= 0 (Paddle's
    rule: with a negative alpha the in-place gradient, which reads the
    output, could not tell the two branches apart)."""
    if float(alpha) < 0:
        raise ValueError(f"elu_: alpha must be >= 0 for the in-place form, got {alpha}; "
                         "use F.elu (out of place) for a negative alpha")
    return inplace.method(x, "elu_", lambda v: _act.elu(v, alpha))


def leaky_relu_(x, negative_slope=0.01, name=None):
    """In place: `x` becomes `leaky_relu(x, negative_slope)`."""
    return inplace.method(x, "leaky_relu_", lambda v: _act.leaky_relu(v, negative_slope))


def hardtanh_(x, min=-1.0, max=1.0, name=None):
    """In place: `x` becomes `hardtanh(x, min, max)`."""
    return inplace.method(x, "hardtanh_", lambda v: _act.hardtanh(v, min, max))


def softmax_(x, axis=-1, dtype=None, name=None):
    """In place: `x` becomes `softmax(x, axis)` (`dtype` casts first; it
    must then be x's own dtype, as a write keeps the tensor's dtype)."""
    return inplace.method(
        x, "softmax_", lambda v: _softmax(v if dtype is None else _cast(v, dtype), axis=axis))


def tanh_(x, name=None):
    """In place: `x` becomes `tanh(x)`."""
    return inplace.method(x, "tanh_", _tanh)


def thresholded_relu_(x, threshold=1.0, name=None):
    """In place: `x` becomes `thresholded_relu(x, threshold)`."""
    return inplace.method(x, "thresholded_relu_",
                          lambda v: _act.thresholded_relu(v, threshold))
