"""Elementwise ops: arithmetic, comparisons, logic, unary math, where, clip, cast."""
from __future__ import annotations

import math

import numpy as np

from ..dispatch import Symbolic, binary_function, bind, unary_function
from ..dtypes import as_dtype, is_floating
from ..registry import Aval, register_op
from ..shapes import broadcast_shapes
from ._base import (cast_like as _cast_like, elementwise_infer, lift, lift_pair, mark_weak,
                    same_infer, unbroadcast)


def _binary(name, kernel, vjp):
    op = register_op(name, kernel, elementwise_infer(kernel, name), vjp)

    def general(x, y):
        x, y = lift_pair(x, y)
        return mark_weak(bind(name, x, y), x, y)
    return binary_function(
        op, general, f"Elementwise `{name}` with NumPy broadcasting and NumPy 2 promotion.")


def _unary(name, kernel, vjp, infer=None, writes_out=False):
    op = register_op(name, kernel, infer or elementwise_infer(kernel, name), vjp,
                     writes_out=writes_out, elementwise=True)

    def general(x):
        x = lift(x)
        return mark_weak(bind(name, x), x)
    return unary_function(op, general, f"Elementwise `{name}`.")


# ---- arithmetic -----------------------------------------------------------
add = _binary("add", np.add, lambda g, out, x, y: (
    unbroadcast(_cast_like(g, x), x), unbroadcast(_cast_like(g, y), y)))
subtract = _binary("subtract", np.subtract, lambda g, out, x, y: (
    unbroadcast(_cast_like(g, x), x), unbroadcast(_cast_like(-g, y), y)))
def _conj(v):
    """Complex values conjugated (a gradient of a product reads the other
    factor's conjugate, as PyTorch's convention); real ones as they are."""
    if np.dtype(v.dtype).kind != "c":
        return v
    from .fft_ops import conj
    return conj(v)


multiply = _binary("multiply", np.multiply, lambda g, out, x, y: (
    unbroadcast(_cast_like(g * _conj(y), x), x), unbroadcast(_cast_like(g * _conj(x), y), y)))
divide = _binary("divide", np.true_divide, lambda g, out, x, y: (
    unbroadcast(_cast_like(g / _conj(y), x), x),
    unbroadcast(_cast_like(-g * _conj(out / y), y), y)))
floor_divide = _binary("floor_divide", np.floor_divide, lambda g, out, x, y: (None, None))
remainder = _binary("remainder", np.remainder, lambda g, out, x, y: (
    unbroadcast(_cast_like(g, x), x),
    unbroadcast(_cast_like(-g * floor_divide(x, y), y), y)))


def _pow_vjp(g, out, x, y):
    gx = g * y * pow(x, y - 1)
    gy = g * out * log(where(greater_than(x, 0), x, ones_like_(x)))
    return unbroadcast(_cast_like(gx, x), x), unbroadcast(_cast_like(gy, y), y)


pow = _binary("pow", np.power, _pow_vjp)


def _minmax_vjp(pick_x):
    def vjp(g, out, x, y):
        mask = pick_x(x, y)
        zero = zeros_like_(g)
        return (unbroadcast(_cast_like(where(mask, g, zero), x), x),
                unbroadcast(_cast_like(where(mask, zero, g), y), y))
    return vjp


maximum = _binary("maximum", np.maximum, _minmax_vjp(lambda x, y: greater_equal(x, y)))
minimum = _binary("minimum", np.minimum, _minmax_vjp(lambda x, y: less_equal(x, y)))

# ---- comparisons and logic (not differentiable) ----------------------------
equal = _binary("equal", np.equal, None)
not_equal = _binary("not_equal", np.not_equal, None)
less_than = _binary("less_than", np.less, None)
less_equal = _binary("less_equal", np.less_equal, None)
greater_than = _binary("greater_than", np.greater, None)
greater_equal = _binary("greater_equal", np.greater_equal, None)
logical_and = _binary("logical_and", np.logical_and, None)
logical_or = _binary("logical_or", np.logical_or, None)
logical_xor = _binary("logical_xor", np.logical_xor, None)
logical_not = _unary("logical_not", np.logical_not, None)

# ---- unary math -------------------------------------------------------------
neg = _unary("neg", np.negative, lambda g, out, x: (-g,))
exp = _unary("exp", np.exp, lambda g, out, x: (g * out,))
log = _unary("log", np.log, lambda g, out, x: (g / x,))
sqrt = _unary("sqrt", np.sqrt, lambda g, out, x: (g / (out * 2.0),))
tanh = _unary("tanh", np.tanh, lambda g, out, x: (g * (1.0 - out * out),))
abs = _unary("abs", np.abs, lambda g, out, x: (g * sign(x),))
_erf_kernel = np.vectorize(math.erf, otypes=[np.float64])
erf = _unary("erf", lambda x: _erf_kernel(x).astype(x.dtype, copy=False),
             lambda g, out, x: (g * exp(-(x * x)) * (2.0 / math.sqrt(math.pi)),), infer=same_infer)
sign = _unary("sign", np.sign, lambda g, out, x: (zeros_like_(g),))


def _sigmoid_kernel(x):
    # exp of a non-positive number only: no overflow warnings for large |x|.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


sigmoid = _unary("sigmoid", _sigmoid_kernel, lambda g, out, x: (g * out * (1.0 - out),), infer=same_infer)


def _relu_kernel(x, out=None):
    return np.maximum(x, x.dtype.type(0), out=out)


# The rule reads the output (out > 0 exactly where x > 0), so the input need
# not be kept for backward and relu may run in place; g * mask keeps g's dtype.
relu = _unary("relu", _relu_kernel,
              lambda g, out, x: (multiply(g, greater_than(out, 0)),),
              infer=same_infer, writes_out=True)


# ---- where / clip / cast -----------------------------------------------------
def _where_infer(c, x, y):
    shape = broadcast_shapes(c.shape, x.shape, y.shape, opname="where")
    return Aval(shape, np.result_type(np.dtype(x.dtype), np.dtype(y.dtype)))


def _where_vjp(g, out, c, x, y):
    zero = zeros_like_(g)
    return (None, unbroadcast(_cast_like(where(c, g, zero), x), x),
            unbroadcast(_cast_like(where(c, zero, g), y), y))


register_op("where", np.where, _where_infer, _where_vjp, elementwise=True)


def where(condition, x=None, y=None, name=None):
    """Elementwise select: `x` where `condition` is true, else `y`. With
    neither x nor y: the coordinates of the true elements (`nonzero(condition,
    as_tuple=True)`, Paddle's one-argument form)."""
    if x is None and y is None:
        from .counting import nonzero
        return nonzero(condition, as_tuple=True)
    if x is None or y is None:
        raise TypeError("where: give both x and y, or neither (the coordinates of the "
                        "true elements)")
    x, y = lift_pair(x, y)
    return bind("where", lift(condition), x, y)


def _clip_kernel(x, min=None, max=None):
    return np.clip(x, min, max).astype(x.dtype, copy=False)


def _clip_vjp(g, out, x, min=None, max=None):
    inside = ones_like_(g)
    if min is not None:
        inside = logical_and(inside, greater_equal(x, min))
    if max is not None:
        inside = logical_and(inside, less_equal(x, max))
    return (where(inside, g, zeros_like_(g)),)


register_op("clip", _clip_kernel, same_infer, _clip_vjp, elementwise=True)


def clip(x, min=None, max=None):
    """Clamp to [min, max]; the gradient passes where the value was inside.

    A bound may be a one-element tensor (Paddle's `clip(x, min=t)`): an
    eager one is read as its number; one computed in the program is a
    value of it (selected with `where`, no gradient to the bound, as
    eager's number has none)."""
    if isinstance(min, Symbolic) or isinstance(max, Symbolic):
        return _clip_by_values(lift(x), min, max)
    return bind("clip", lift(x), min=None if min is None else float(min),
                max=None if max is None else float(max))


def _clip_by_values(x, low, high):
    out = x
    for bound, outside in ((low, less_than), (high, greater_than)):
        if bound is None:
            continue
        if isinstance(bound, Symbolic):
            if int(np.prod(bound.shape)) != 1:
                raise ValueError(f"clip: a tensor bound must hold one value, got shape "
                                 f"{list(bound.shape)}")
            b = cast(bind("reshape", bind("detach", bound), shape=()), x.dtype)
        else:
            b = cast(lift(float(bound)), x.dtype)
        out = where(outside(out, b), b, out)
    return out


def _cast_kernel(x, dtype):
    return x.astype(dtype, copy=False)


def _cast_vjp(g, out, x, dtype):
    return (cast(g, x.dtype) if is_floating(x.dtype) else None,)


register_op("cast", _cast_kernel, lambda x, dtype: Aval(tuple(x.shape), np.dtype(dtype)),
            _cast_vjp, elementwise=True)


def cast(x, dtype):
    dtype = as_dtype(dtype)
    x = lift(x)
    if np.dtype(x.dtype) == dtype:
        return x
    return bind("cast", x, dtype=dtype.name)


def zeros_like_(x):
    return bind("full_like", x, fill_value=0, dtype=None)


def ones_like_(x):
    return bind("full_like", x, fill_value=1, dtype=None)
