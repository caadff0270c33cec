"""ONNX rules of the nn ops (`d2s/core/ops/nn_ops.py`)."""
from __future__ import annotations

import numpy as np

from ...core.registry import register_lowering


def _cross_entropy_onnx(ns, logits, label):
    # Labels out of [0, C) fail in ONNX Runtime's GatherElements, as numpy raises.
    rows = ns.node("Unsqueeze", ns.cast(label, np.int64), ns.ints([1]))
    picked = ns.node("GatherElements", ns.node("LogSoftmax", logits, axis=-1), rows, axis=1)
    loss = ns.node("Neg", ns.node("ReduceMean", picked, keepdims=0))
    return loss, ns.node("Softmax", logits, axis=-1)


def _cross_entropy_grad_onnx(ns, g, probs, label):
    rows = ns.node("Unsqueeze", ns.cast(label, np.int64), ns.ints([1]))
    minus_one = ns.node("Expand", ns.scalar(-1, probs.dtype), ns.shape_of(rows))
    p = ns.node("ScatterElements", probs, rows, minus_one, axis=1, reduction="add")
    n = ns.cast(ns.node("Reshape", ns.shape_of(label), ns.ints([])), g.dtype)
    return ns.node("Mul", p, ns.cast(ns.node("Div", g, n), probs.dtype))


register_lowering("onnx", "softmax", lambda ns, x, axis: ns.node("Softmax", x, axis=axis))
register_lowering("onnx", "log_softmax", lambda ns, x, axis: ns.node("LogSoftmax", x, axis=axis))
register_lowering("onnx", "cross_entropy", _cross_entropy_onnx)
register_lowering("onnx", "cross_entropy_grad", _cross_entropy_grad_onnx)
register_lowering("onnx", "softplus", lambda ns, x: ns.node("Softplus", x))
