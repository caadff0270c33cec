"""ONNX rule of batch normalization's statistics op (`d2s/core/ops/norm_ops.py`):
ONNX's `BatchNormalization` in training mode also scales, shifts and mixes
the running statistics, so the op is written out with reductions."""
from __future__ import annotations

from ...core.registry import register_lowering


def _batch_normalize_onnx(ns, x, axes, epsilon):
    mu = ns.node("ReduceMean", x, ns.ints(axes), keepdims=1)
    centered = ns.node("Sub", x, mu)
    var = ns.node("ReduceMean", ns.node("Mul", centered, centered), ns.ints(axes), keepdims=1)
    s = ns.node("Sqrt", ns.node("Add", var, ns.scalar(epsilon, x.dtype)))
    return ns.node("Div", centered, s), mu, var


register_lowering("onnx", "batch_normalize", _batch_normalize_onnx)
