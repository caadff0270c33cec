"""Paddle's regularized incomplete gamma functions, `gammainc(x, y)` =
P(x, y) (the lower one) and `gammaincc(x, y)` = Q(x, y) = 1 - P(x, y), for
x > 0, y >= 0. Compositions of elementwise ops (gradients, static form,
xla and ONNX are those ops'): where y < x + 1 the power series of P (every
term positive), elsewhere the continued fraction of Q (modified Lentz),
each with a fixed number of steps that reaches double precision for x up
to about a hundred (fewer steps keep the program small); each branch runs
on arguments clipped to its own range, so neither overflows where it is
not used."""
from __future__ import annotations

import numpy as np

from ._base import lift_pair

__all__ = ["gammainc", "gammaincc"]

_SERIES_TERMS, _FRACTION_STEPS, _TINY = 120, 60, 1e-300


def _ops():
    from .. import ops
    return ops


def _both(x, y, where):
    ops = _ops()
    a, z = lift_pair(x, y)
    for v in (a, z):
        if np.dtype(v.dtype).kind != "f":
            raise TypeError(f"{where}: x and y must be float32 or float64, got {v.dtype}")
    lg = ops.lgamma(a)
    one = ops.full_like(z * a, 1.0)
    # P by its series, on y clipped below x + 1
    ys = ops.minimum(z * one, a + 1.0)
    ys_pos = ops.where(ys > 0, ys, one)
    term = one / a
    total = term
    for n in range(1, _SERIES_TERMS):
        term = term * ys / (a + float(n))
        total = total + term
    p = ops.where(ys > 0, total * ops.exp(a * ops.log(ys_pos) - ys_pos - lg), one * 0.0)
    # Q by its continued fraction, on y clipped above x + 1
    yc = ops.maximum(z * one, a + 1.0)
    b = yc + 1.0 - a
    c = one * (1.0 / _TINY)
    d = one / b
    h = d
    for i in range(1, _FRACTION_STEPS):
        an = (a - float(i)) * float(i)
        b = b + 2.0
        d = an * d + b
        d = ops.where(ops.abs(d) < _TINY, one * _TINY, d)
        c = b + an / c
        c = ops.where(ops.abs(c) < _TINY, one * _TINY, c)
        d = one / d
        h = h * d * c
    q = h * ops.exp(a * ops.log(yc) - yc - lg)
    series = z < a + 1.0
    return ops.where(series, p, 1.0 - q), ops.where(series, 1.0 - p, q)


def gammainc(x, y, name=None):
    """The regularized lower incomplete gamma function P(x, y)."""
    return _both(x, y, "gammainc")[0]


def gammaincc(x, y, name=None):
    """The regularized upper incomplete gamma function Q(x, y) = 1 - P(x, y)."""
    return _both(x, y, "gammaincc")[1]
