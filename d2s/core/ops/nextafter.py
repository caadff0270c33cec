"""Paddle's `nextafter(x, y)`: the next representable float after `x` in
the direction of `y`, elementwise (float32/float64, broadcast). A primitive
(a bit-level step no composite of arithmetic gives exactly); no gradient,
as in Paddle."""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import broadcast_shapes
from ._base import lift_pair

__all__ = ["nextafter"]


def _infer(x, y):
    shape = broadcast_shapes(tuple(x.shape), tuple(y.shape), opname="nextafter")
    return Aval(shape, np.result_type(np.dtype(x.dtype), np.dtype(y.dtype)))


register_op("nextafter", np.nextafter, _infer, None, elementwise=True)


def nextafter(x, y, name=None):
    x, y = lift_pair(x, y)
    for v in (x, y):
        if np.dtype(v.dtype).kind != "f":
            raise TypeError(f"nextafter: x and y must be float32 or float64 tensors, got "
                            f"{v.dtype}")
    return bind("nextafter", x, y)
