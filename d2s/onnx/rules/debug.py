"""ONNX rules of `print` and `assert` (`d2s/core/ops/debug_ops.py`): none."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering


register_lowering("onnx", "print",
                  NotLowerable("it prints at run time; an ONNX model has no output stream"))
register_lowering("onnx", "assert",
                  NotLowerable("it raises AssertionError at run time; ONNX has no exceptions"))
