"""ONNX rules of the primitives of `d2s/core/ops/math_more.py`. ONNX has no
special functions and no loop-free gcd: those ops say why they do not
export (nor does `poisson_icdf`, of `random_extra.py`)."""
from __future__ import annotations

import math

import numpy as np

from ...core.registry import NotLowerable, register_lowering


def _atan2(ns, x, y):
    """atan(x / y), moved by +-pi where y < 0 (0 where both are 0). ONNX
    Runtime's Atan is float32 only: a float64 atan2 does not export."""
    x, y = ns.promote(x, y)
    out = ns.outputs[0].dtype
    if out != np.float32:
        raise ns.Unsupported(f"atan2 of {out} (ONNX Runtime's Atan is float32 only): cast "
                             "the operands to float32 before the op to export it")
    x, y = ns.cast(x, out), ns.cast(y, out)
    at = ns.node("Atan", ns.node("Div", x, y))
    zero = ns.scalar(0, out)
    turn = ns.node("Where", ns.node("Less", x, zero), ns.scalar(-math.pi, out),
                   ns.scalar(math.pi, out))
    at = ns.node("Where", ns.node("Less", y, zero), ns.node("Add", at, turn), at)
    both = ns.node("And", ns.node("Equal", x, zero), ns.node("Equal", y, zero))
    return ns.node("Where", both, zero, at)


register_lowering("onnx", "atan2", _atan2)


def _signbit(ns, x):
    zero = ns.scalar(0, x.dtype)
    neg = ns.node("Less", x, zero)
    if np.dtype(x.dtype).kind != "f":
        return neg
    # -0.0: equal to 0, and 1 / x is -inf
    minus_zero = ns.node("And", ns.node("Equal", x, zero),
                         ns.node("Less", ns.node("Div", ns.scalar(1, x.dtype), x), zero))
    return ns.node("Or", neg, minus_zero)


register_lowering("onnx", "signbit", _signbit)
_NO_SPECIAL = NotLowerable("ONNX has no erfinv / lgamma / digamma / polygamma operator")
for _op in ("erfinv", "lgamma", "digamma", "trigamma"):
    register_lowering("onnx", _op, _NO_SPECIAL)
register_lowering("onnx", "gcd", NotLowerable("Euclid's algorithm loops a data-dependent number "
                                              "of times; ONNX has no gcd operator"))
register_lowering("onnx", "poisson_icdf", NotLowerable(
    "its loop runs until a sum reaches a drawn number; the exporter has no such Loop rule"))
