"""ONNX rules of the elementwise ops (`d2s/core/ops/elementwise.py`), with
explicit Casts after NumPy 2's promotion (an ONNX op takes one type)."""
from __future__ import annotations

import numpy as np

from ...core.registry import register_lowering
from ._base import onnx_binary, onnx_compare, onnx_unary


def _divide_onnx(ns, x, y):
    dtype = ns.outputs[0].dtype  # true division of ints is a float
    return ns.node("Div", ns.cast(x, dtype), ns.cast(y, dtype))


def _floor_onnx(remainder):
    """ONNX rule of `floor_divide` or `remainder` with numpy's semantics (ONNX's
    integer Div truncates and float Mod is C's fmod)."""
    def rule(ns, x, y):
        dtype = ns.outputs[0].dtype
        x, y = ns.cast(x, dtype), ns.cast(y, dtype)
        if dtype.kind == "f":
            return _float_divmod(ns, x, y, remainder)
        return _int_divmod(ns, x, y, remainder)
    rule.__name__ = "onnx_remainder" if remainder else "onnx_floor_divide"
    return rule


def _int_divmod(ns, x, y, remainder):
    """numpy gives 0 for `x // 0` and `x % 0`; hardware division traps on them
    (and on MIN // -1), so those divisors are replaced by 1 and fixed after."""
    dtype = x.dtype
    zero, one = ns.scalar(0, dtype), ns.scalar(1, dtype)
    by_zero = ns.node("Equal", y, zero)
    special = by_zero
    if dtype.kind == "i":
        by_minus_one = ns.node("Equal", y, ns.scalar(-1, dtype))
        special = ns.node("Or", by_zero, by_minus_one)
    safe = ns.node("Where", special, one, y)
    if remainder:  # ONNX's integer Mod (fmod=0) takes the divisor's sign, as Python
        return ns.node("Where", by_zero, zero, ns.node("Mod", x, safe, fmod=0))
    q = ns.node("Div", x, safe)
    if dtype.kind == "i":
        r = ns.node("Mod", x, safe, fmod=1)  # C's remainder: truncated division
        inexact = ns.node("Not", ns.node("Equal", r, zero))
        signs = ns.node("Xor", ns.node("Less", r, zero),
                        ns.node("Less", safe, zero))
        q = ns.node("Sub", q, ns.cast(ns.node("And", inexact, signs), dtype))
        q = ns.node("Where", by_minus_one, ns.node("Neg", x), q)
    return ns.node("Where", by_zero, zero, q)


def _float_divmod(ns, x, y, remainder):
    """numpy's `npy_divmod` step by step: fmod, the Python sign convention,
    the quotient snapped to an integer, signed zeros, and x / 0."""
    dtype = x.dtype
    zero, one = ns.scalar(0, dtype), ns.scalar(1, dtype)
    mod = ns.node("Mod", x, y, fmod=1)
    fix = ns.node("And", ns.node("Not", ns.node("Equal", mod, zero)),
                  ns.node("Xor", ns.node("Less", y, zero), ns.node("Less", mod, zero)))
    if remainder:  # x % 0 is fmod's NaN: the steps below leave it alone
        mod = ns.node("Where", fix, ns.node("Add", mod, y), mod)
        return _signed_zero(ns, mod, ns.node("Less", y, zero))  # a zero takes y's sign
    div = ns.node("Div", ns.node("Sub", x, mod), y)
    div = ns.node("Where", fix, ns.node("Sub", div, one), div)
    floor = ns.node("Floor", div)
    floor = ns.node("Where", ns.node("Greater", ns.node("Sub", div, floor),
                                     ns.scalar(0.5, dtype)),
                    ns.node("Add", floor, one), floor)
    ratio = ns.node("Div", x, y)
    # a zero quotient takes the sign of x / y (1 / -0.0 is -inf)
    floor = _signed_zero(ns, ns.node("Where", ns.node("Equal", div, zero), zero, floor),
                         ns.node("Less", ns.node("Div", one, ratio), zero))
    return ns.node("Where", ns.node("Equal", y, zero), ratio, floor)


def _signed_zero(ns, x, negative):
    """`x` with its zeros made -0.0 where `negative`: a multiplication by -1,
    since ONNX Runtime's Where drops the sign of a selected -0.0."""
    zero = ns.scalar(0, x.dtype)
    is_zero = ns.node("Equal", x, zero)
    flip = ns.node("Where", ns.node("And", is_zero, negative), ns.scalar(-1, x.dtype),
                   ns.scalar(1, x.dtype))
    return ns.node("Mul", ns.node("Where", is_zero, zero, x), flip)


def _not_equal_onnx(ns, x, y):
    return ns.node("Not", onnx_compare("Equal")(ns, x, y))


def _logical_onnx(op_type):
    """numpy's logical ops read any dtype as truth values; ONNX's take bools."""
    def rule(ns, *xs):
        return ns.node(op_type, *(ns.cast(x, np.bool_) for x in xs))
    return rule


def _abs_onnx(ns, x):
    return x if x.dtype == np.bool_ else ns.node("Abs", x)


def _erf_onnx(ns, x):
    # ONNX Runtime has Erf for float32 only: float64 runs in float32 (~1e-7 relative)
    return ns.cast(ns.node("Erf", ns.cast(x, np.float32)), x.dtype)


def _sigmoid_onnx(ns, x):
    """The kernel's stable form: ONNX Runtime's float32 Sigmoid loses the tails
    (relative error above 1 near x = -18)."""
    e = ns.node("Exp", ns.node("Neg", ns.node("Abs", x)))
    one = ns.scalar(1, x.dtype)
    denominator = ns.node("Add", one, e)
    return ns.node("Where", ns.node("GreaterOrEqual", x, ns.scalar(0, x.dtype)),
                   ns.node("Div", one, denominator), ns.node("Div", e, denominator))


def _where_onnx(ns, c, x, y):
    """ONNX Runtime's Where takes no bool branches: for bools it is
    (c and x) or (not c and y)."""
    if x.dtype == np.bool_:
        return ns.node("Or", ns.node("And", c, x), ns.node("And", ns.node("Not", c), y))
    return ns.node("Where", c, x, y)


def _clip_onnx(ns, x, min=None, max=None):
    # numpy clips an int array to float bounds in float64, then casts back
    dtype = np.result_type(x.dtype, *(b for b in (min, max) if b is not None))
    bounds = [None if b is None else ns.scalar(b, dtype) for b in (min, max)]
    return ns.cast(ns.node("Clip", ns.cast(x, dtype), *bounds), x.dtype)



register_lowering("onnx", "add", onnx_binary("Add", on_bools="Or"))
register_lowering("onnx", "subtract", onnx_binary("Sub"))
register_lowering("onnx", "multiply", onnx_binary("Mul", on_bools="And"))
register_lowering("onnx", "divide", _divide_onnx)
register_lowering("onnx", "floor_divide", _floor_onnx(remainder=False))
register_lowering("onnx", "remainder", _floor_onnx(remainder=True))
register_lowering("onnx", "pow", onnx_binary("Pow"))
register_lowering("onnx", "maximum", onnx_binary("Max", on_bools="Or"))
register_lowering("onnx", "minimum", onnx_binary("Min", on_bools="And"))
register_lowering("onnx", "equal", onnx_compare("Equal"))
register_lowering("onnx", "not_equal", _not_equal_onnx)
register_lowering("onnx", "less_than", onnx_compare("Less"))
register_lowering("onnx", "less_equal", onnx_compare("LessOrEqual"))
register_lowering("onnx", "greater_than", onnx_compare("Greater"))
register_lowering("onnx", "greater_equal", onnx_compare("GreaterOrEqual"))
register_lowering("onnx", "logical_and", _logical_onnx("And"))
register_lowering("onnx", "logical_or", _logical_onnx("Or"))
register_lowering("onnx", "logical_xor", _logical_onnx("Xor"))
register_lowering("onnx", "logical_not", _logical_onnx("Not"))
register_lowering("onnx", "neg", onnx_unary("Neg"))
register_lowering("onnx", "exp", onnx_unary("Exp"))
register_lowering("onnx", "log", onnx_unary("Log"))
register_lowering("onnx", "sqrt", onnx_unary("Sqrt"))
register_lowering("onnx", "tanh", onnx_unary("Tanh"))
register_lowering("onnx", "abs", _abs_onnx)
register_lowering("onnx", "erf", _erf_onnx)
register_lowering("onnx", "sign", onnx_unary("Sign"))
register_lowering("onnx", "sigmoid", _sigmoid_onnx)
register_lowering("onnx", "relu", lambda ns, x: ns.node("Relu", x) if x.dtype.kind == "f" else
    ns.node("Max", x, ns.scalar(0, x.dtype)))
register_lowering("onnx", "where",
                  lambda ns, c, x, y: _where_onnx(ns, ns.cast(c, np.bool_), *ns.promote(x, y)))
register_lowering("onnx", "clip", _clip_onnx)
register_lowering("onnx", "cast", lambda ns, x, dtype: ns.cast(x, dtype))
