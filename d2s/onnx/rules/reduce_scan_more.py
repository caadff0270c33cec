"""ONNX rules of the scans of `d2s/core/ops/reduce_scan_more.py`: ONNX has
none of them."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering

register_lowering("onnx", "logcumsumexp", NotLowerable(
    "ONNX has no log-add-exp scan, and exp / CumSum / Log would overflow or lose entries far "
    "below the running maximum"))
register_lowering("onnx", "cum_extreme", NotLowerable(
    "ONNX (opset 18) has no cumulative max or min"))
