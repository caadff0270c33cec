"""ONNX forms of `weight_dequantize` and `gather_dequantize`
(`d2s/core/ops/quant.py`).

`weight_dequantize`: Cast, Mul by the per-group scales and Reshape (8
bits), after BitwiseAnd / BitShift unpack the two 4-bit values of each byte
(4 bits). `gather_dequantize`: Gather of the int8 rows and of their scales,
Cast and Mul. Not DequantizeLinear: its form changes with the opset (it
was revised up to opset 25) and ONNX Runtime has no kernel of it at the
opset d2s writes by default. Standard opset-18 ops, so every runtime runs
the quantized model (weights stay int8/uint8 in the file)."""
from __future__ import annotations

import numpy as np

from ...core.registry import register_lowering


def _weight_dequantize(ns, q, scale, bits=8, k=1, transpose=False):
    rows, n = q.shape
    if bits == 4:
        lo = ns.node("BitwiseAnd", q, ns.scalar(15, np.uint8), shape=(rows, n))
        hi = ns.node("BitShift", q, ns.scalar(4, np.uint8), direction="RIGHT", shape=(rows, n))
        pair = ns.node("Concat", ns.reshape(lo, [rows, 1, n]), ns.reshape(hi, [rows, 1, n]),
                       axis=1, shape=(rows, 2, n))
        rows *= 2
        w = ns.node("Sub", ns.cast(ns.reshape(pair, [rows, n]), np.float32),
                    ns.scalar(8, np.float32), shape=(rows, n))
        w = ns.cast(w, scale.dtype)
    else:
        w = ns.cast(q, scale.dtype)
    groups = scale.shape[0]
    w = ns.node("Mul", ns.reshape(w, [groups, rows // groups, n]),
                ns.reshape(scale, [groups, 1, n]), shape=(groups, rows // groups, n))
    w = ns.reshape(w, [rows, n])
    if k != rows:
        w = ns.node("Slice", w, ns.ints([0]), ns.ints([k]), ns.ints([0]), shape=(k, n))
    if transpose:
        w = ns.node("Transpose", w, perm=[1, 0], shape=(n, k))
    return w


register_lowering("onnx", "weight_dequantize", _weight_dequantize)


def _gather_dequantize(ns, q, scale, index):
    if index.dtype not in (np.int32, np.int64):
        index = ns.cast(index, np.int64)
    rows = ns.node("Gather", q, index, axis=0)                  # int8 [*index, dim]
    scales = ns.node("Gather", scale, index, axis=0)            # [*index, 1]
    return ns.node("Mul", ns.cast(rows, scale.dtype), scales)


register_lowering("onnx", "gather_dequantize", _gather_dequantize)
