"""`yolo_loss_targets` in ONNX: refused (the assignment of a training loss;
an exported model is the forward pass)."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering

register_lowering("onnx", "yolo_loss_targets", NotLowerable(
    "the target assignment of YOLOv3's training loss; an ONNX model holds the forward pass "
    "only (export the detector, and decode with yolo_box)"))
