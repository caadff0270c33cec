"""Paddle's `frexp`: `x = mantissa * 2 ** exponent` with `0.5 <= |mantissa| < 1`
(0 for 0; inf and nan kept, exponent 0), both in x's float dtype. A
composite: the exponent from `floor(log2|x|) + 1`, corrected by one where
log2 rounded across a power of two, and the mantissa from an exact
division by a power of two; so gradients (1 / 2**exponent for the
mantissa), the static form, xla and ONNX are those ops'. (Subnormal inputs:
XLA on CPU may flush them to zero, and they then decompose as 0 there.)"""
from __future__ import annotations

import numpy as np

from ._base import constant, lift

__all__ = ["frexp"]


def _ops():
    from .. import ops
    return ops


def frexp(x, name=None):
    ops = _ops()
    x = lift(x)
    if np.dtype(x.dtype).kind != "f":
        raise TypeError(f"frexp: x must be float32 or float64, got {x.dtype}")
    a = ops.abs(x)
    normal = ops.logical_and(a > 0, ops.isfinite(x))
    one = ops.full_like(x, 1.0)
    e = ops.floor(ops.log2(ops.where(normal, a, one))) + 1.0
    two = constant(np.asarray(2.0, x.dtype))
    # log2 may round across a power of two, either way: one correction each
    m = ops.abs(x / ops.pow(two, e))
    e = e + ops.where(m >= 1.0, one, one * 0.0)
    m = ops.abs(x / ops.pow(two, e))
    e = e - ops.where(ops.logical_and(m < 0.5, normal), one, one * 0.0)
    mantissa = ops.where(normal, x / ops.pow(two, e), x)
    return mantissa, ops.where(normal, e, one * 0.0)
