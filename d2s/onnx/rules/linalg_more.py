"""ONNX form of `inverse` (`d2s/core/ops/linalg_more.py`): none."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering

register_lowering("onnx", "inverse", NotLowerable(
    "ONNX's standard operator set has no matrix inverse (only a Microsoft extension "
    "that other runtimes lack)"))
