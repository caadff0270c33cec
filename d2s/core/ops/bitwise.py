"""Bitwise ops on integer and bool tensors: `&`, `|`, `^`, `~`, and shifts.

On bools they are the logical ops; on integers they work on the bits
(two's complement), as numpy's and Paddle's. The Tensor operators `&`,
`|`, `^` and `~` dispatch here for integer operands and to the logical
ops for bools (core.methods), so `x & 1` of an int tensor is a bit mask,
never a truth value. Not differentiable (integer results).
"""
from __future__ import annotations

import numpy as np

from ..dispatch import binary_function, bind, unary_function
from ..registry import register_op
from ._base import elementwise_infer, lift, lift_pair, mark_weak

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
           "bitwise_left_shift", "bitwise_right_shift"]


def _check(name, *xs):
    for x in xs:
        kind = np.dtype(x.dtype).kind
        if kind not in "biu":
            raise TypeError(f"{name}: integer or bool tensors only, got {x.dtype}")


def _checked(name, ufunc):
    """The kernel: numpy's ufunc, after the operand check (eager calls reach
    the kernel without `general`)."""
    def kernel(*xs):
        _check(name, *(np.asarray(x) for x in xs))
        return ufunc(*xs)
    kernel.__name__ = name
    return kernel


def _binary(name, ufunc):
    kernel = _checked(name, ufunc)
    op = register_op(name, kernel, elementwise_infer(kernel, name), None)

    def general(x, y):
        x, y = lift_pair(x, y)
        _check(name, x, y)
        return mark_weak(bind(name, x, y), x, y)
    return binary_function(op, general, f"Elementwise `{name}` (integer or bool operands, "
                                        "NumPy broadcasting and promotion).")


bitwise_and = _binary("bitwise_and", np.bitwise_and)
bitwise_or = _binary("bitwise_or", np.bitwise_or)
bitwise_xor = _binary("bitwise_xor", np.bitwise_xor)
_left_shift = _binary("bitwise_left_shift", np.left_shift)
_right_shift = _binary("bitwise_right_shift", np.right_shift)

_not_kernel = _checked("bitwise_not", np.invert)
_not_op = register_op("bitwise_not", _not_kernel, elementwise_infer(_not_kernel, "bitwise_not"),
                      None, elementwise=True)


def _not_general(x):
    x = lift(x)
    _check("bitwise_not", x)
    return mark_weak(bind("bitwise_not", x), x)


bitwise_not = unary_function(_not_op, _not_general,
                             "Elementwise `~x`: the bits flipped (logical not of a bool).")


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
    unsigned = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}[np.dtype(x.dtype).itemsize]
    if np.dtype(x.dtype).kind == "u":
        return _right_shift(x, y)
    return cast(_right_shift(cast(x, unsigned), cast(lift(y), unsigned)), x.dtype)
