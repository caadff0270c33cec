"""`nextafter` has no ONNX form: the step is on the float's bits, and the
opset the exporter targets has no bit cast."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering

register_lowering("onnx", "nextafter", NotLowerable(
    "ONNX (opset 18) has no bit cast to step a float to its neighbour"))
