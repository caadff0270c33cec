"""ONNX rules of the creation ops (`d2s/core/ops/creation.py`)."""
from __future__ import annotations

import numpy as np

from ...core.ops.creation import _arange_kernel
from ...core.registry import register_lowering
from ._base import onnx_spec


def onnx_fill(ns, dims, fill_value, dtype):
    """ONNX: the scalar `fill_value` expanded to `dims` (ints or int64 values);
    a small fill of known shape is a constant."""
    if all(isinstance(d, int) for d in dims) and np.prod(dims, dtype=np.int64) <= 16:
        return ns.const(np.full(dims, fill_value, dtype))
    return ns.node("Expand", ns.scalar(fill_value, dtype), ns.shape_vector(dims))


def _arange_onnx(ns, *bounds, start, end, step, dtype):
    if not bounds:  # numpy's own arange is the constant
        return ns.const(_arange_kernel(start=start, end=end, step=step, dtype=dtype))
    dynamic = iter(bounds)  # a None bound is the next run-time input
    start, end, step = (ns.node("Reshape", ns.cast(next(dynamic), dtype), ns.ints([]))
                        if b is None else ns.scalar(b, dtype) for b in (start, end, step))
    return ns.node("Range", start, end, step)


def _numel_onnx(ns, x, axes=None):
    axes = range(x.ndim) if axes is None else axes
    dims = [ns.dim(x, a) for a in axes]
    if all(isinstance(d, int) for d in dims):
        return ns.const(np.array(int(np.prod(dims)), dtype=np.int64))
    return ns.node("ReduceProd", ns.shape_vector(dims), keepdims=0)


register_lowering("onnx", "full", lambda ns, *dims, shape, fill_value, dtype: onnx_fill(
    ns, onnx_spec(shape, dims), fill_value, dtype))
register_lowering("onnx", "assign_value", lambda ns, value: ns.const(value))
register_lowering("onnx", "full_like", lambda ns, x, fill_value, dtype=None: onnx_fill(
    ns, [ns.dim(x, i) for i in range(x.ndim)], fill_value, dtype or x.dtype))
register_lowering("onnx", "arange", _arange_onnx)
register_lowering("onnx", "shape", lambda ns, x: ns.shape_of(x))
register_lowering("onnx", "numel", _numel_onnx)


def _one_hot(ns, x, num_classes):
    # the identity's rows by Gather, which fails on an index past the end, as
    # the kernel raises; a negative value (Gather would wrap it) is sent there
    index = ns.cast(x, np.int64)
    safe = ns.node("Where", ns.node("GreaterOrEqual", index, ns.scalar(0, np.int64)), index,
                   ns.scalar(num_classes, np.int64))
    return ns.node("Gather", ns.const(np.eye(num_classes, dtype=np.float32)), safe, axis=0)


register_lowering("onnx", "one_hot", _one_hot)
