"""ONNX rule of `var` (`d2s/core/ops/counting.py`); the other counting ops are
compositions of existing ops."""
from __future__ import annotations

from ...core.registry import register_lowering
from ._base import onnx_product


def _var(ns, x, axes, unbiased, keepdim):
    """The kernel's two passes: the mean, then the summed squares over n - 1
    (or n); n is read from x's shape where its dims are unknown."""
    n = onnx_product(ns, [ns.dim(x, a) for a in axes])
    if isinstance(n, int):
        count, denom = ns.scalar(n, x.dtype), ns.scalar(n - 1 if unbiased else n, x.dtype)
    else:
        count = ns.cast(ns.node("Reshape", n, ns.ints([]), shape=()), x.dtype)
        denom = ns.node("Sub", count, ns.scalar(1, x.dtype)) if unbiased else count
    mean = ns.node("Div", ns.node("ReduceSum", x, ns.ints(axes), keepdims=1), count)
    d = ns.node("Sub", x, mean)
    total = ns.node("ReduceSum", ns.node("Mul", d, d), ns.ints(axes), keepdims=int(keepdim))
    return ns.node("Div", total, denom)


register_lowering("onnx", "var", _var)
