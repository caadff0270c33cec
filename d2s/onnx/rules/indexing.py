"""ONNX rule of `set_item` (`d2s/core/ops/set_item.py`): a ScatterND into
the flattened tensor (every index form `getitem` exports works here too)."""
from __future__ import annotations

import numpy as np

from ...core.ops._base import onnx_dims, onnx_product
from ...core.ops.indexing import onnx_index
from ...core.registry import register_lowering


def _onnx(ns, x, v, *tensors, spec):
    """Flat ids of x's elements, indexed as the forward indexes x, say where
    each element of v (expanded to the indexed shape) goes: one ScatterND."""
    dims = onnx_dims(ns, x)
    n = onnx_product(ns, dims)
    count = ns.scalar(n, np.int64) if isinstance(n, int) else ns.node(
        "Reshape", n, ns.ints([]), shape=())
    ids = ns.reshape(ns.node("Range", ns.scalar(0, np.int64), count, ns.scalar(1, np.int64)),
                     dims).with_shape(x.shape)
    picked = onnx_index(ns, ids, spec, tensors)
    where = ns.node("Reshape", picked, ns.ints([-1, 1]))
    values = ns.node("Expand", ns.cast(v, x.dtype), ns.node("Shape", picked))
    flat = ns.node("ScatterND", ns.node("Reshape", x, ns.ints([-1])), where,
                   ns.node("Reshape", values, ns.ints([-1])))
    return ns.reshape(flat, dims)


register_lowering("onnx", "set_item", _onnx)
