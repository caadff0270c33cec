"""Helpers shared by the ONNX rules of several op families (`ns` is the
exporter's graph context, `onnx.graph.RuleNamespace`)."""
from __future__ import annotations

import numpy as np


def onnx_binary(op_type, on_bools=None):
    """ONNX rule `op_type(x, y)` after NumPy 2 promotion (explicit Casts: ONNX
    ops take one type). `on_bools`: the op numpy's arithmetic is on bools
    (`True + True` is `or`)."""
    def rule(ns, x, y):
        x, y = ns.promote(x, y)
        if x.dtype == np.bool_ and on_bools is not None:
            return ns.node(on_bools, x, y)
        return ns.node(op_type, x, y)
    rule.__name__ = f"onnx_{op_type}"
    return rule


def onnx_compare(op_type):
    """ONNX rule of a comparison: promoted operands (bools as int32 for the
    ordering ones, which ONNX Runtime does not define on bools), bool result."""
    def rule(ns, x, y):
        x, y = ns.promote(x, y)
        if x.dtype == np.bool_ and op_type != "Equal":
            x, y = ns.cast(x, np.int32), ns.cast(y, np.int32)
        return ns.node(op_type, x, y, dtype=np.bool_)
    rule.__name__ = f"onnx_{op_type}"
    return rule


def onnx_unary(op_type):
    """ONNX rule `op_type(x)` computed in the op's output dtype (numpy's
    `exp` of an int is a float)."""
    def rule(ns, x):
        return ns.node(op_type, ns.cast(x, ns.outputs[0].dtype))
    rule.__name__ = f"onnx_{op_type}"
    return rule


def onnx_spec(spec, dims):
    """A shape spec (shape_args) for an ONNX rule: each None replaced by the next
    run-time dim (an ONNX value); the ints stay."""
    dynamic = iter(dims)
    return [next(dynamic) if d is None else d for d in spec]


def onnx_dims(ns, x):
    """Every dim of `x` for an ONNX rule: ints where known, run-time values elsewhere."""
    return [ns.dim(x, i) for i in range(x.ndim)]


def onnx_product(ns, dims):
    """The product of dims (ints or 1-element int64 values): an int when all are
    known, else a 1-element int64 value."""
    if all(isinstance(d, int) for d in dims):
        return int(np.prod(dims, dtype=np.int64))
    return ns.node("ReduceProd", ns.shape_vector(dims), keepdims=1, shape=(1,))


def onnx_scatter_add(ns, g, x, pick):
    """ONNX rule of an indexing op's gradient: zeros shaped like `x`, with `g`
    added where `pick` (the forward indexing, as a rule) read each element
    (duplicates accumulate). `pick` is applied to the flat ids of x's
    elements, which then say where each element of `g` goes."""
    dims = onnx_dims(ns, x)
    n = onnx_product(ns, dims)
    count = ns.scalar(n, np.int64) if isinstance(n, int) else ns.node(
        "Reshape", n, ns.ints([]), shape=())
    ids = ns.reshape(ns.node("Range", ns.scalar(0, np.int64), count, ns.scalar(1, np.int64)),
                     dims)
    where = ns.node("Reshape", pick(ids.with_shape(x.shape)), ns.ints([-1, 1]))
    zeros = ns.node("Expand", ns.scalar(0, g.dtype), ns.shape_vector([n]))
    flat = ns.node("ScatterND", zeros, where, ns.node("Reshape", g, ns.ints([-1])),
                   reduction="add")
    return ns.reshape(flat, dims)
