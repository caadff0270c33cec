"""ONNX rule of `prod` (`d2s/core/ops/reduce_more.py`)."""
from __future__ import annotations

from .reduction import _reduce_onnx
from ...core.registry import register_lowering

register_lowering("onnx", "prod", _reduce_onnx("ReduceProd"))
