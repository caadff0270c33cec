"""onnx rule of `resize_weights` (`d2s/core/ops/resize.py`)."""
from __future__ import annotations

from ...core.ops import resize as _resize  # noqa: F401  (declares resize_weights)
from ...core.registry import NotLowerable, register_lowering

register_lowering("onnx", "resize_weights", NotLowerable(
    "an interpolation matrix built at run time from sizes the model learns only then; "
    "export with the resized input's spatial dims fixed in its InputSpec (the matrix "
    "is then a constant)"))
