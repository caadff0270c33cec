"""ONNX rules of the nn ops (`d2s/core/ops/nn_ops.py`)."""
from __future__ import annotations

import numpy as np

from ...core.ops.nn_ops import IGNORED_LABEL
from ...core.registry import register_lowering


def _kept_rows(ns, label):
    """(label as int64 with ignored rows read as class 0, bool (N, 1) of the
    rows kept, their count as a float of `dtype`-to-be): IGNORED_LABEL rows
    add nothing and leave the mean's divisor, as the kernel's."""
    label = ns.cast(label, np.int64)
    kept = ns.node("Not", ns.node("Equal", label, ns.scalar(IGNORED_LABEL, np.int64)))
    safe = ns.node("Where", kept, label, ns.scalar(0, np.int64))
    return (ns.node("Unsqueeze", safe, ns.ints([1])), ns.node("Unsqueeze", kept, ns.ints([1])),
            kept)


def _cross_entropy_onnx(ns, logits, label):
    # Labels out of [0, C) (but the ignored) fail in ONNX Runtime's
    # GatherElements, as numpy raises.
    rows, kept, kept_1d = _kept_rows(ns, label)
    picked = ns.node("GatherElements", ns.node("LogSoftmax", logits, axis=-1), rows, axis=1)
    picked = ns.node("Where", kept, picked, ns.scalar(0, picked.dtype))
    n = ns.node("ReduceSum", ns.cast(kept_1d, picked.dtype), keepdims=0)
    loss = ns.node("Neg", ns.node("Div", ns.node("ReduceSum", picked, keepdims=0), n))
    return loss, ns.node("Softmax", logits, axis=-1)


def _cross_entropy_grad_onnx(ns, g, probs, label):
    rows, kept, kept_1d = _kept_rows(ns, label)
    minus_one = ns.node("Expand", ns.scalar(-1, probs.dtype), ns.shape_of(rows))
    p = ns.node("ScatterElements", probs, rows, minus_one, axis=1, reduction="add")
    p = ns.node("Where", kept, p, ns.scalar(0, probs.dtype))
    n = ns.node("ReduceSum", ns.cast(kept_1d, g.dtype), keepdims=0)
    return ns.node("Mul", p, ns.cast(ns.node("Div", g, n), probs.dtype))


register_lowering("onnx", "softmax", lambda ns, x, axis: ns.node("Softmax", x, axis=axis))
register_lowering("onnx", "log_softmax", lambda ns, x, axis: ns.node("LogSoftmax", x, axis=axis))
register_lowering("onnx", "cross_entropy", _cross_entropy_onnx)
register_lowering("onnx", "cross_entropy_grad", _cross_entropy_grad_onnx)
register_lowering("onnx", "softplus", lambda ns, x: ns.node("Softplus", x))
