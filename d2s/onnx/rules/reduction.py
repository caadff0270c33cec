"""ONNX rules of the reductions (`d2s/core/ops/reduction.py`)."""
from __future__ import annotations

import numpy as np

from ...core.ops.reduction import _summed_axes
from ...core.registry import register_lowering
from ._base import onnx_dims


def _sum_to_like_onnx(ns, g, x):
    if g.shape == x.shape and None not in x.shape:
        return g
    axes = _summed_axes(g.shape, x.shape)
    summed = ns.node("ReduceSum", g, ns.ints(axes), keepdims=1) if axes else g
    return ns.reshape(summed, onnx_dims(ns, x))


def _reduce_onnx(op_type):
    """ONNX rule `op_type` over `axes`, in the dtype numpy's reduction gives
    (int sums are int64, int means float64); bools, which ONNX Runtime does
    not reduce, go through int32. No axes (axis=[]) reduce nothing."""
    def rule(ns, x, axes, keepdim):
        out = ns.outputs[0].dtype
        x = ns.cast(x, out)
        if not axes:
            return x
        if x.dtype == np.bool_:
            x = ns.cast(x, np.int32)
        return ns.cast(ns.node(op_type, x, ns.ints(axes), keepdims=int(keepdim)), out)
    rule.__name__ = f"onnx_{op_type}"
    return rule


def _argmax_onnx(ns, x, axis, keepdim):
    if x.dtype == np.bool_:
        x = ns.cast(x, np.int32)
    if axis is None:  # over all elements, as numpy's flat index
        flat = ns.node("ArgMax", ns.node("Reshape", x, ns.ints([-1])), axis=0, keepdims=0)
        return ns.node("Reshape", flat, ns.ints([1] * x.ndim if keepdim else []))
    # the first of equal maxima, as numpy
    return ns.node("ArgMax", x, axis=axis, keepdims=int(keepdim), select_last_index=0)


register_lowering("onnx", "sum_to_like", _sum_to_like_onnx)
register_lowering("onnx", "broadcast_like", lambda ns, g, x: ns.node("Expand", g, ns.shape_of(x)))
register_lowering("onnx", "sum", _reduce_onnx("ReduceSum"))
register_lowering("onnx", "mean", _reduce_onnx("ReduceMean"))
register_lowering("onnx", "max", _reduce_onnx("ReduceMax"))
register_lowering("onnx", "min", _reduce_onnx("ReduceMin"))
register_lowering("onnx", "argmax", _argmax_onnx)
