"""ONNX rules of the bitwise ops (`d2s/core/ops/bitwise.py`): ONNX's
BitwiseAnd/Or/Xor/Not (opset 18), the logical ops on bools; shifts are
BitShift, which ONNX defines on unsigned integers only."""
from __future__ import annotations

import numpy as np

from ...core.registry import NotLowerable, register_lowering


def _bitwise(op_type, on_bools):
    def rule(ns, x, y):
        x, y = ns.promote(x, y)
        if x.dtype == np.bool_:
            return ns.node(on_bools, x, y)
        return ns.node(op_type, x, y)
    rule.__name__ = f"onnx_{op_type}"
    return rule


def _not(ns, x):
    return ns.node("Not" if x.dtype == np.bool_ else "BitwiseNot", x)


register_lowering("onnx", "bitwise_and", _bitwise("BitwiseAnd", "And"))
register_lowering("onnx", "bitwise_or", _bitwise("BitwiseOr", "Or"))
register_lowering("onnx", "bitwise_xor", _bitwise("BitwiseXor", "Xor"))
register_lowering("onnx", "bitwise_not", _not)
register_lowering("onnx", "bitwise_left_shift", NotLowerable(
    "ONNX's BitShift takes unsigned integers only, and numpy's shift of a signed one "
    "differs from it"))
register_lowering("onnx", "bitwise_right_shift", NotLowerable(
    "ONNX's BitShift takes unsigned integers only, and numpy's arithmetic right shift of "
    "a signed one differs from it"))
