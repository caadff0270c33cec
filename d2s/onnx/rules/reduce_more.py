"""ONNX rules of `prod` and `logsumexp` (`d2s/core/ops/reduce_more.py`)."""
from __future__ import annotations

from .reduction import _reduce_onnx
from ...core.registry import register_lowering

register_lowering("onnx", "prod", _reduce_onnx("ReduceProd"))


def _logsumexp(ns, x, axes, keepdim):
    """The kernel's arithmetic: shifted by the max where it is finite, by 0
    elsewhere (ReduceLogSumExp leaves the shift to the runtime)."""
    if not axes:
        return x
    m = ns.node("ReduceMax", x, ns.ints(axes), keepdims=1)
    bad = ns.node("Or", ns.node("IsInf", m), ns.node("IsNaN", m))
    m = ns.node("Where", bad, ns.scalar(0, x.dtype), m)
    e = ns.node("Exp", ns.node("Sub", x, m))
    out = ns.node("Add", ns.node("Log", ns.node("ReduceSum", e, ns.ints(axes), keepdims=1)), m)
    return out if keepdim else ns.node("Squeeze", out, ns.ints(axes))


register_lowering("onnx", "logsumexp", _logsumexp)
