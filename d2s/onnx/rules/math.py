"""ONNX rules of the unary math ops (`d2s/core/ops/math.py`), computed in the
op's output dtype (NumPy 2's rule: an int input gives float64)."""
from __future__ import annotations

import math

import numpy as np

from ._base import onnx_unary
from ...core.registry import register_lowering

for _op, _type in [("sin", "Sin"), ("cos", "Cos")]:
    register_lowering("onnx", _op, onnx_unary(_type))


def _float32_only(op_type, float64=None):
    """ONNX Runtime defines Tan, Asin, Acos, Atan, Sinh and Cosh for float32
    only: float64 takes `float64(ns, x)`, an exact-enough form from ops it
    has, or, where there is none, the export stops and says so."""
    plain = onnx_unary(op_type)

    def rule(ns, x):
        if ns.outputs[0].dtype != np.float64:
            return plain(ns, x)
        if float64 is None:
            raise ns.Unsupported(f"{op_type} of float64 (ONNX Runtime has it for float32 "
                                 "only): cast to float32 before the op to export it")
        return float64(ns, ns.cast(x, np.float64))
    rule.__name__ = f"onnx_{op_type}"
    return rule


def _tan64(ns, x):
    return ns.node("Div", ns.node("Sin", x), ns.node("Cos", x))


def _cosh64(ns, x):
    both = ns.node("Add", ns.node("Exp", x), ns.node("Exp", ns.node("Neg", x)))
    return ns.node("Mul", both, ns.scalar(0.5, x.dtype))


def _sinh64(ns, x):
    # (expm1(x) - expm1(-x)) / 2: no cancellation near 0, unlike exp(x) - exp(-x)
    diff = ns.node("Sub", _expm1(ns, x), _expm1(ns, ns.node("Neg", x)))
    return ns.node("Mul", diff, ns.scalar(0.5, x.dtype))


def _whole(op_type):
    """Floor / Ceil: integers are already whole (ONNX's ops take floats only)."""
    def rule(ns, x):
        return x if x.dtype.kind != "f" else ns.node(op_type, x)
    return rule


def _trunc(ns, x):
    if x.dtype.kind != "f":
        return x
    negative = ns.node("Less", x, ns.scalar(0, x.dtype))
    return ns.node("Where", negative, ns.node("Ceil", x), ns.node("Floor", x))


def _round(ns, x):
    """Halfway cases away from zero (ONNX's Round is to even): trunc(x), plus
    sign(x) where the exact remainder x - trunc(x) is at least a half."""
    if x.dtype.kind != "f":
        return x
    t = _trunc(ns, x)
    far = ns.node("GreaterOrEqual", ns.node("Abs", ns.node("Sub", x, t)),
                  ns.scalar(0.5, x.dtype))
    return ns.node("Add", t, ns.node("Where", far, ns.node("Sign", x), ns.scalar(0, x.dtype)))


def _rsqrt(ns, x):
    x = ns.cast(x, ns.outputs[0].dtype)
    return ns.node("Reciprocal", ns.node("Sqrt", x))


def _log1p(ns, x):
    """log(1 + x) to full precision for small x (ONNX has no Log1p):
    u = 1 + x; where u == 1 the answer is x, else log(u) * x / (u - 1), which
    cancels the rounding of u (Goldberg's formula)."""
    x = ns.cast(x, ns.outputs[0].dtype)
    one = ns.scalar(1, x.dtype)
    u = ns.node("Add", one, x)
    um1 = ns.node("Sub", u, one)
    is_one = ns.node("Equal", u, one)
    safe = ns.node("Where", is_one, one, um1)
    ratio = ns.node("Div", ns.node("Mul", ns.node("Log", u), x), safe)
    # u = inf: log(u) * x / (u - 1) is inf / inf; the answer is inf
    ratio = ns.node("Where", ns.node("IsInf", u), u, ratio)
    return ns.node("Where", is_one, x, ratio)


def _expm1(ns, x):
    """exp(x) - 1 to full precision for small x (ONNX has no Expm1): with
    u = exp(x), (u - 1) * x / log(u) where u is neither 1 nor huge (Kahan)."""
    x = ns.cast(x, ns.outputs[0].dtype)
    one = ns.scalar(1, x.dtype)
    u = ns.node("Exp", x)
    um1 = ns.node("Sub", u, one)
    logu = ns.node("Log", u)
    is_one = ns.node("Equal", u, one)
    minus_one = ns.node("Equal", um1, ns.scalar(-1, x.dtype))
    plain = ns.node("Or", minus_one, ns.node("IsInf", u))
    safe_log = ns.node("Where", is_one, one, logu)
    kahan = ns.node("Div", ns.node("Mul", um1, x), safe_log)
    return ns.node("Where", is_one, x, ns.node("Where", plain, um1, kahan))


def _log_base(base):
    def rule(ns, x):
        x = ns.cast(x, ns.outputs[0].dtype)
        return ns.node("Div", ns.node("Log", x), ns.scalar(math.log(base), x.dtype))
    return rule


register_lowering("onnx", "floor", _whole("Floor"))
register_lowering("onnx", "ceil", _whole("Ceil"))
register_lowering("onnx", "trunc", _trunc)
register_lowering("onnx", "round", _round)
register_lowering("onnx", "rsqrt", _rsqrt)
register_lowering("onnx", "log1p", _log1p)
register_lowering("onnx", "expm1", _expm1)
register_lowering("onnx", "log2", _log_base(2.0))
register_lowering("onnx", "log10", _log_base(10.0))
register_lowering("onnx", "tan", _float32_only("Tan", _tan64))
register_lowering("onnx", "sinh", _float32_only("Sinh", _sinh64))
register_lowering("onnx", "cosh", _float32_only("Cosh", _cosh64))
for _op, _type in [("asin", "Asin"), ("acos", "Acos"), ("atan", "Atan")]:
    register_lowering("onnx", _op, _float32_only(_type))
