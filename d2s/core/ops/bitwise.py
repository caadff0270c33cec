"""Bit shifts of integer tensors: `x << y`, `x >> y` (the and/or/xor/not ops
are in bits_special). Arithmetic right shift for signed integers, as
numpy's and Paddle's; `is_arithmetic=False` shifts in zeros. Not
differentiable (integer results)."""
from __future__ import annotations

import numpy as np

from ..dispatch import binary_function, bind
from ..registry import register_op
from ._base import elementwise_infer, lift, lift_pair, mark_weak

__all__ = ["bitwise_left_shift", "bitwise_right_shift"]


def _check(name, *xs):
    for x in xs:
        if np.dtype(x.dtype).kind not in "iu":
            raise TypeError(f"{name}: integer tensors only, got {x.dtype}")


def _checked(name, ufunc):
    """The kernel: numpy's ufunc after the operand check (eager calls reach
    the kernel without `general`)."""
    def kernel(x, y):
        _check(name, np.asarray(x), np.asarray(y))
        return ufunc(x, y)
    kernel.__name__ = name
    return kernel


def _binary(name, ufunc):
    kernel = _checked(name, ufunc)
    op = register_op(name, kernel, elementwise_infer(kernel, name), None)

    def general(x, y):
        x, y = lift_pair(x, y)
        _check(name, x, y)
        return mark_weak(bind(name, x, y), x, y)
    return binary_function(op, general, f"Elementwise `{name}` of integer tensors.")


_left_shift = _binary("bitwise_left_shift", np.left_shift)
_right_shift = _binary("bitwise_right_shift", np.right_shift)


def bitwise_left_shift(x, y, is_arithmetic=True, out=None, name=None):
    """`x << y` elementwise (integers)."""
    return _left_shift(x, y)


def bitwise_right_shift(x, y, is_arithmetic=True, out=None, name=None):
    """`x >> y` elementwise: arithmetic (the sign kept) for signed integers,
    as numpy's; `is_arithmetic=False` shifts in zeros (the bits read as
    unsigned)."""
    if is_arithmetic:
        return _right_shift(x, y)
    from .elementwise import cast
    x = lift(x)
    if np.dtype(x.dtype).kind == "u":
        return _right_shift(x, y)
    unsigned = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}[np.dtype(x.dtype).itemsize]
    return cast(_right_shift(cast(x, unsigned), cast(lift(y), unsigned)), x.dtype)
