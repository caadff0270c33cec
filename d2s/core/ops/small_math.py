"""Small Paddle math functions made of other ops: `t` (the transpose of a
matrix; vectors and scalars unchanged), `sinc` (sin(pi x) / (pi x), 1 at 0)
and `polar` (abs * (cos angle + i sin angle)); gradients, static form, xla
and ONNX are those ops'."""
from __future__ import annotations

import math

from ._base import lift

__all__ = ["t", "sinc", "polar"]


def _ops():
    from .. import ops
    return ops


def t(input, name=None):
    """`input` transposed when 2-D; 0-D and 1-D returned as they are."""
    x = lift(input)
    if len(x.shape) > 2:
        raise ValueError(f"t: input must be at most 2-D, got shape {list(x.shape)}; use "
                         "transpose(x, perm) for more dims")
    return _ops().transpose(x, [1, 0]) if len(x.shape) == 2 else x


def sinc(x, name=None):
    """sin(pi x) / (pi x), and 1 where x is 0."""
    ops = _ops()
    x = lift(x)
    zero = x == 0
    px = ops.where(zero, ops.full_like(x, 1.0), x) * math.pi
    return ops.where(zero, ops.full_like(x, 1.0), ops.sin(px) / px)


def polar(abs, angle, name=None):
    """The complex numbers of modulus `abs` and argument `angle`."""
    ops = _ops()
    from .fft_ops import complex as _complex
    a, th = lift(abs), lift(angle)
    return _complex(a * ops.cos(th), a * ops.sin(th))
