"""ONNX rules of `argsort` (`d2s/core/ops/search.py`): a full-length TopK, whose
ties come lower index first, as the kernel's stable sort (both ways); and of
`topk`: TopK itself."""
from __future__ import annotations

import numpy as np

from ...core.registry import register_lowering


def _argsort(ns, x, axis, descending):
    if x.dtype == np.bool_:  # TopK takes numbers
        x = ns.cast(x, np.int32)
    k = ns.shape_vector([ns.dim(x, axis)])
    value = type(x)  # the exporter's Value class (this module never imports onnx)
    values = value(ns.graph.names.fresh("sorted"), x.dtype, x.shape)
    indices = value(ns.graph.names.fresh("order"), np.dtype(np.int64), x.shape)
    ns.graph.add_node("TopK", [x, k], [values, indices],
                      dict(axis=axis, largest=int(descending), sorted=1))
    return indices
register_lowering("onnx", "argsort", _argsort)


def _topk(ns, x, k, axis, largest):
    src = ns.cast(x, np.int32) if x.dtype == np.bool_ else x  # TopK takes numbers
    shape = tuple(k if i == axis else d for i, d in enumerate(x.shape))
    value = type(x)  # the exporter's Value class (this module never imports onnx)
    values = value(ns.graph.names.fresh("top"), src.dtype, shape)
    indices = value(ns.graph.names.fresh("top_index"), np.dtype(np.int64), shape)
    ns.graph.add_node("TopK", [src, ns.ints([k])], [values, indices],
                      dict(axis=axis, largest=int(largest), sorted=1))
    return ns.cast(values, x.dtype), indices


register_lowering("onnx", "topk", _topk)
