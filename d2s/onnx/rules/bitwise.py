"""ONNX rules of the bit shifts (`d2s/core/ops/bitwise.py`): none. ONNX's
BitShift takes unsigned integers only."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering

register_lowering("onnx", "bitwise_left_shift", NotLowerable(
    "ONNX's BitShift takes unsigned integers only, and numpy's shift of a signed one "
    "differs from it"))
register_lowering("onnx", "bitwise_right_shift", NotLowerable(
    "ONNX's BitShift takes unsigned integers only, and numpy's arithmetic right shift of "
    "a signed one differs from it"))
