"""ONNX rule of `matmul` (`d2s/core/ops/linalg.py`)."""
from __future__ import annotations

import numpy as np

from ...core.registry import register_lowering


def _matmul_onnx(ns, x, y):
    x, y = ns.promote(x, y)
    if x.dtype == np.bool_:
        raise ns.Unsupported("a matrix product of bools (ONNX's MatMul takes numbers)")
    return ns.node("MatMul", x, y)  # numpy's matmul: 1-D operands, broadcast batches


register_lowering("onnx", "matmul", _matmul_onnx)
