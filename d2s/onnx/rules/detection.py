"""ONNX forms of the detection primitives (`d2s/core/ops/detection_ops.py`)."""
from __future__ import annotations

import numpy as np

from ...core.registry import NotLowerable, lowers, register_lowering


@lowers("onnx", "nms_keep")
def _nms_keep(ns, boxes, groups, iou_threshold):
    """ONNX's NonMaxSuppression with the groups as its classes: each box's
    score is 1 for its own group (a descending ramp keeps the given order),
    0 elsewhere, and a score threshold above 0 leaves a box only its own
    group. The selected (batch, class, box) rows become the mask. The
    operator takes float32 boxes: float64 ones are cast."""
    f32 = np.dtype(np.float32)
    b = ns.cast(boxes, f32)
    n = ns.node("Shape", b, start=0, end=1)                          # [1]
    count = ns.node("Squeeze", n, ns.ints([0]))
    ramp = ns.node("Range", ns.scalar(0, np.int64), count, ns.scalar(1, np.int64))
    rank = ns.node("Sub", ns.cast(count, f32), ns.cast(ramp, f32))   # N .. 1
    # groups as class ids 0..G-1 (the ids themselves may be any int64)
    g_max = ns.node("ReduceMax", groups, keepdims=1)
    g_min = ns.node("ReduceMin", groups, keepdims=1)
    classes = ns.node("Add", ns.node("Sub", g_max, g_min), ns.ints([1]))  # [1]
    cls_range = ns.node("Range", ns.scalar(0, np.int64), ns.node("Squeeze", classes,
                                                                 ns.ints([0])),
                        ns.scalar(1, np.int64))
    own = ns.node("Equal", ns.node("Unsqueeze", ns.node("Sub", groups, g_min), ns.ints([0])),
                  ns.node("Unsqueeze", cls_range, ns.ints([1])))       # [G, N]
    scores = ns.node("Mul", ns.cast(own, f32), ns.node("Unsqueeze", rank, ns.ints([0])))
    picked = ns.node("NonMaxSuppression", ns.node("Unsqueeze", b, ns.ints([0])),
                     ns.node("Unsqueeze", scores, ns.ints([0])), n,
                     ns.const(np.asarray([iou_threshold], np.float32)),
                     ns.const(np.asarray([0.5], np.float32)), dtype=np.dtype(np.int64))
    idx = ns.node("Gather", picked, ns.scalar(2, np.int64), axis=1)     # [K]
    zeros = ns.node("Mul", ramp, ns.scalar(0, np.int64))
    ones = ns.node("Add", ns.node("Mul", idx, ns.scalar(0, np.int64)), ns.scalar(1, np.int64))
    hit = ns.node("ScatterElements", zeros, idx, ones, axis=0)
    return ns.cast(hit, np.bool_)



_GRAD = NotLowerable("a gradient op of training programs; an ONNX model holds the forward "
                     "pass only (export the layer, not a training step)")
register_lowering("onnx", "roi_align_grad", _GRAD)

register_lowering("onnx", "roi_align", NotLowerable(
    "ONNX Runtime has no kernel for RoiAlign at the opsets d2s exports (18 and later resolve "
    "to RoiAlign-22; its CPU kernels stop at 16)"))
