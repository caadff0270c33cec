"""ONNX rules of the shape ops (`d2s/core/ops/manipulation.py`)."""
from __future__ import annotations

import numpy as np

from ...core.registry import register_lowering
from ._base import onnx_dims, onnx_product, onnx_scatter_add, onnx_spec


def _expand_onnx_dims(ns, x, spec):
    """The target dims for ONNX's Expand: a -1 is the input's own dim."""
    lead = len(spec) - x.ndim
    return [ns.dim(x, i - lead) if isinstance(d, int) and d == -1 else d
            for i, d in enumerate(spec)]


def _flatten_dims(ns, x, start, stop):
    if not x.ndim:
        return [1]
    dims = onnx_dims(ns, x)
    return dims[:start] + [onnx_product(ns, dims[start:stop + 1])] + dims[stop + 1:]


def _concat_piece_onnx(ns, g, xs, axis, index):
    start = 0
    for x in xs[:index]:
        d = ns.dim(x, axis)
        start = start + d if isinstance(start, int) and isinstance(d, int) else ns.node(
            "Add", ns.shape_vector([start]), ns.shape_vector([d]))
    size = ns.dim(xs[index], axis)
    end = start + size if isinstance(start, int) and isinstance(size, int) else ns.node(
        "Add", ns.shape_vector([start]), ns.shape_vector([size]))
    return ns.node("Slice", g, ns.shape_vector([start]), ns.shape_vector([end]), ns.ints([axis]))


def _gather_onnx(ns, x, index, axis):
    """ONNX's Gather is `np.take` (negative indices included) for int32/int64 indices."""
    if index.dtype not in (np.int32, np.int64):
        index = ns.cast(index, np.int64)
    return ns.node("Gather", x, index, axis=axis)


# ONNX's Reshape reads 0 (copy the input dim) and -1 (infer) as Paddle does
register_lowering("onnx", "reshape", lambda ns, x, *dims, shape: ns.node(
    "Reshape", x, ns.shape_vector(onnx_spec(shape, dims))))
# (`reshape_like(x, x)` is d2s's identity op: nothing to compute)
register_lowering("onnx", "reshape_like",
                  lambda ns, g, x: g if g is x else ns.reshape(g, onnx_dims(ns, x)))
register_lowering("onnx", "expand", lambda ns, x, *dims, shape: ns.node(
    "Expand", x, ns.shape_vector(_expand_onnx_dims(ns, x, onnx_spec(shape, dims)))))
register_lowering("onnx", "detach", lambda ns, x: x)
register_lowering("onnx", "transpose", lambda ns, x, perm: ns.node("Transpose", x, perm=list(perm)))
register_lowering("onnx", "unsqueeze", lambda ns, x, axes: ns.node("Unsqueeze", x, ns.ints(axes)))
register_lowering("onnx", "squeeze",
                  lambda ns, x, axes: ns.node("Squeeze", x, ns.ints(axes)) if axes else x)
register_lowering("onnx", "flatten",
                  lambda ns, x, start, stop: ns.reshape(x, _flatten_dims(ns, x, start, stop)))
register_lowering("onnx", "concat",
                  lambda ns, *xs, axis: ns.node("Concat", *ns.promote(*xs), axis=axis))
register_lowering("onnx", "concat_piece",
                  lambda ns, g, *xs, axis, index: _concat_piece_onnx(ns, g, xs, axis, index))
register_lowering("onnx", "stack",
                  lambda ns, *xs, axis: ns.node("Concat", *(ns.node("Unsqueeze", x, ns.ints([axis]))
                                                   for x in ns.promote(*xs)), axis=axis))
register_lowering("onnx", "gather", lambda ns, x, index, axis: _gather_onnx(ns, x, index, axis))
register_lowering("onnx", "gather_grad", lambda ns, g, x, index, axis: onnx_scatter_add(
    ns, g, x, lambda ids: _gather_onnx(ns, ids, index, axis)))
