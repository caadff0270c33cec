"""ONNX rules of the cumulative ops (`d2s/core/ops/scan.py`)."""
from __future__ import annotations

import numpy as np

from ...core.registry import NotLowerable, register_lowering


def _cumsum(ns, x, axis, reverse):
    out = ns.outputs[0].dtype  # NumPy's: int32 and bool sums are int64
    x = ns.cast(x, out)
    return ns.node("CumSum", x, ns.scalar(axis, np.int64), reverse=int(reverse))


register_lowering("onnx", "cumsum", _cumsum)
register_lowering("onnx", "cumprod", NotLowerable(
    "ONNX (opset 18, the exporter's floor) has no cumulative product, and "
    "exp(cumsum(log x)) is not exact for zeros or negative numbers"))
