"""ONNX rules of the bitwise ops (`d2s/core/ops/bits_special.py`): Bitwise*
on integers (opset 18), And / Or / Xor / Not on bools."""
from __future__ import annotations

import numpy as np

from ...core.registry import NotLowerable, register_lowering


def _binary(int_op, bool_op):
    def rule(ns, x, y):
        x, y = ns.promote(x, y)
        return ns.node(bool_op if x.dtype == np.bool_ else int_op, x, y)
    rule.__name__ = f"onnx_{int_op}"
    return rule


register_lowering("onnx", "bitwise_and", _binary("BitwiseAnd", "And"))
register_lowering("onnx", "bitwise_or", _binary("BitwiseOr", "Or"))
register_lowering("onnx", "bitwise_xor", _binary("BitwiseXor", "Xor"))
register_lowering("onnx", "bitwise_not",
                  lambda ns, x: ns.node("Not" if x.dtype == np.bool_ else "BitwiseNot", x))
register_lowering("onnx", "bitwise_left_shift", NotLowerable(
    "ONNX's BitShift takes unsigned integers only, and numpy's shift of a signed one "
    "differs from it"))
register_lowering("onnx", "bitwise_right_shift", NotLowerable(
    "ONNX's BitShift takes unsigned integers only, and numpy's arithmetic right shift of "
    "a signed one differs from it"))
