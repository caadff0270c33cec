"""Paddle's modified Bessel functions of the first kind, `i0`, `i1` and the
exponentially scaled `i0e`, `i1e` (times exp(-|x|)). Compositions of
elementwise ops, so gradients, the static form, xla and ONNX are those
ops': for |x| <= 30 the power series (every term of one sign: no
cancellation, full double precision with 70 terms), beyond it the
asymptotic expansion of the scaled function (25 terms). Both branches are
computed on arguments clipped to their range and the right one selected,
so neither overflows where it is not used."""
from __future__ import annotations

import math

import numpy as np

from ._base import lift

__all__ = ["i0", "i0e", "i1", "i1e"]

_SPLIT, _SERIES_TERMS, _ASYMPTOTIC_TERMS = 30.0, 70, 25


def _ops():
    from .. import ops
    return ops


def _float(x, where):
    x = lift(x)
    if np.dtype(x.dtype).kind != "f":
        raise TypeError(f"{where}: x must be float32 or float64, got {x.dtype}")
    return x


def _scaled(x, order):
    """exp(-|x|) I_order(x), order 0 or 1."""
    ops = _ops()
    a = ops.abs(x)
    small = a <= _SPLIT
    xs = ops.clip(x, -_SPLIT, _SPLIT)             # the series' argument (keeps the sign)
    q = (xs * 0.5) * (xs * 0.5)
    term = ops.full_like(xs, 1.0) if order == 0 else xs * 0.5
    total = term
    for k in range(1, _SERIES_TERMS):
        term = term * q / float(k * (k + order))
        total = total + term
    series = total * ops.exp(-ops.abs(xs))
    xl = ops.maximum(a, ops.full_like(a, _SPLIT))  # the expansion's argument
    mu = 4.0 * order * order
    term = ops.full_like(xl, 1.0)
    total = term
    for k in range(1, _ASYMPTOTIC_TERMS):
        term = term * (-(mu - (2 * k - 1) ** 2) / (8.0 * k)) / xl
        total = total + term
    asymptotic = total / ops.sqrt(xl * (2.0 * math.pi))
    if order == 1:
        asymptotic = asymptotic * ops.sign(x)
    return ops.where(small, series, asymptotic)


def i0e(x, name=None):
    """exp(-|x|) I0(x)."""
    return _scaled(_float(x, "i0e"), 0)


def i1e(x, name=None):
    """exp(-|x|) I1(x)."""
    return _scaled(_float(x, "i1e"), 1)


def i0(x, name=None):
    """I0(x), the modified Bessel function of the first kind of order 0."""
    x = _float(x, "i0")
    return _scaled(x, 0) * _ops().exp(_ops().abs(x))


def i1(x, name=None):
    """I1(x), the modified Bessel function of the first kind of order 1."""
    x = _float(x, "i1")
    return _scaled(x, 1) * _ops().exp(_ops().abs(x))
