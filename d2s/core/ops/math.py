"""Unary math (trigonometric, rounding, log/exp variants) and the small
composites Paddle names beside them (square, reciprocal, rsqrt-free forms,
scale, increment, isnan/isinf/isfinite).

Each primitive is a NumPy ufunc-like kernel whose dtype rule is the kernel's
own (an int input gives float64, as NumPy 2 does); the gradient is written
with d2s ops. The xla and ONNX rules live in `backends/xla/rules/math.py` and
`onnx/rules/math.py`. Composites are functions of existing ops: nothing new
to lower or differentiate.
"""
from __future__ import annotations

import math as _math

import numpy as np

from ..dispatch import bind, unary_function
from ..registry import register_op
from ._base import elementwise_infer, lift, mark_weak
from .elementwise import (abs as _abs, divide, equal, logical_not, logical_or, multiply,
                          not_equal, zeros_like_)

__all__ = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "floor", "ceil",
           "trunc", "round", "rsqrt", "log1p", "expm1", "log2", "log10", "square",
           "reciprocal", "isnan", "isinf", "isfinite", "scale", "increment"]


def _unary(name, kernel, vjp, doc):
    op = register_op(name, kernel, elementwise_infer(kernel, name), vjp, elementwise=True)

    def general(x):
        x = lift(x)
        return mark_weak(bind(name, x), x)
    return unary_function(op, general, doc)


def _round_half_away(x):
    """Paddle's `round`: halfway cases away from zero (NumPy's rounds to even).
    `x - trunc(x)` is exact, so no 0.49999999999999994 + 0.5 rounding slip."""
    if x.dtype.kind not in "fc":
        return np.trunc(x)  # integers and bools are already whole
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0).astype(x.dtype, copy=False)


def _rsqrt_kernel(x):
    root = np.sqrt(x)
    if type(root) is np.ndarray:  # (a 0-d input gives a numpy scalar)
        return np.reciprocal(root, out=root)  # one array, not two
    return np.reciprocal(root)


_LN2, _LN10 = _math.log(2.0), _math.log(10.0)


def _zero_grad(g, out, x):
    return (zeros_like_(g),)


sin = _unary("sin", np.sin, lambda g, out, x: (g * cos(x),), "Elementwise sine.")
cos = _unary("cos", np.cos, lambda g, out, x: (-(g * sin(x)),), "Elementwise cosine.")
tan = _unary("tan", np.tan, lambda g, out, x: (g * (1.0 + out * out),), "Elementwise tangent.")
asin = _unary("asin", np.arcsin, lambda g, out, x: (g * rsqrt(1.0 - x * x),),
              "Elementwise arcsine.")
acos = _unary("acos", np.arccos, lambda g, out, x: (-(g * rsqrt(1.0 - x * x)),),
              "Elementwise arccosine.")
atan = _unary("atan", np.arctan, lambda g, out, x: (g / (1.0 + x * x),),
              "Elementwise arctangent.")
sinh = _unary("sinh", np.sinh, lambda g, out, x: (g * cosh(x),),
              "Elementwise hyperbolic sine.")
cosh = _unary("cosh", np.cosh, lambda g, out, x: (g * sinh(x),),
              "Elementwise hyperbolic cosine.")
floor = _unary("floor", np.floor, _zero_grad, "Largest integer not above x (a float).")
ceil = _unary("ceil", np.ceil, _zero_grad, "Smallest integer not below x (a float).")
trunc = _unary("trunc", np.trunc, _zero_grad, "x rounded toward zero.")
round = _unary("round", _round_half_away, _zero_grad,
               "Nearest integer, halfway cases away from zero (Paddle's rule).")
rsqrt = _unary("rsqrt", _rsqrt_kernel, lambda g, out, x: (g * out * out * out * -0.5,),
               "1 / sqrt(x).")
log1p = _unary("log1p", np.log1p, lambda g, out, x: (g / (x + 1.0),),
               "log(1 + x), accurate for small x.")
expm1 = _unary("expm1", np.expm1, lambda g, out, x: (g * (out + 1.0),),
               "exp(x) - 1, accurate for small x.")
log2 = _unary("log2", np.log2, lambda g, out, x: (g / (x * _LN2),), "Base-2 logarithm.")
log10 = _unary("log10", np.log10, lambda g, out, x: (g / (x * _LN10),), "Base-10 logarithm.")


# ---- composites ------------------------------------------------------------------
def square(x, name=None):
    """x * x (its dtype is x's)."""
    x = lift(x)
    return multiply(x, x)


def reciprocal(x, name=None):
    """1 / x (true division: an int x gives float64, as NumPy)."""
    return divide(1.0, lift(x))


def isnan(x, name=None):
    """True where x is NaN (never for integer or bool x)."""
    x = lift(x)
    return not_equal(x, x)


def isinf(x, name=None):
    """True where x is +-inf."""
    x = lift(x)
    if np.dtype(x.dtype).kind not in "fc":
        return not_equal(x, x)  # all False, shaped like x
    return equal(_abs(x), float("inf"))


def isfinite(x, name=None):
    """True where x is neither NaN nor +-inf."""
    return logical_not(logical_or(isnan(x), isinf(x)))


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """Paddle's `scale`: `scale * x + bias` (or `scale * (x + bias)` with
    `bias_after_scale=False`); x's dtype is kept for Python-number scale/bias.
    `act` names an activation applied after ("relu", "tanh", "sigmoid")."""
    from . import elementwise as _e
    x = lift(x)
    out = x * scale + bias if bias_after_scale else (x + bias) * scale
    if act is not None:
        acts = {"relu": _e.relu, "tanh": _e.tanh, "sigmoid": _e.sigmoid}
        if act not in acts:
            raise ValueError(f"scale: unknown act {act!r} (use one of {sorted(acts)})")
        out = acts[act](out)
    return out


def increment(x, value=1.0, name=None):
    """`x + value` in x's dtype. Paddle's `increment` also writes the result
    back into x; here it returns a new tensor (in-place updates are not part
    of this op family)."""
    x = lift(x)
    out = x + value
    if np.dtype(out.dtype) != np.dtype(x.dtype):
        from .elementwise import cast
        out = cast(out, x.dtype)
    return out
