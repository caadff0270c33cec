"""Helpers shared by the op families: operand lifting and common rules."""
from __future__ import annotations

import functools

import numpy as np

from ..dispatch import Symbolic, bind
from ..dtypes import as_dtype, default_dtype_for, is_python_scalar, weak_scalar_dtype
from ..registry import Aval
from ..shapes import broadcast_shapes
from ..tensor import Tensor


def is_value(x):
    """A d2s value (eager Tensor or static Variable)."""
    return isinstance(x, (Tensor, Symbolic))


def constant(value, dtype=None):
    """A constant as a d2s value: an eager Tensor, or a constant op in a program."""
    arr = np.asarray(value, dtype=as_dtype(dtype) if dtype is not None else default_dtype_for(value))
    if arr.ndim == 0:
        return bind("full", shape=(), fill_value=arr.item(), dtype=arr.dtype.name)
    return bind("assign_value", value=arr)


def lift(x, like=None):
    """Turn a Python scalar / array into a d2s value; scalars are weak next to `like`."""
    if is_value(x):
        return x
    if is_python_scalar(x) and like is not None:
        return constant(x, weak_scalar_dtype(like.dtype, x))
    return constant(x)


def lift_pair(x, y):
    if is_value(x):
        return x, lift(y, like=x)
    if is_value(y):
        return lift(x, like=y), y
    return lift(x), lift(y)


@functools.lru_cache(maxsize=4096)
def probe_dtype(kernel, *dtypes):
    """The kernel is the dtype rule: run it on empty arrays of these dtypes."""
    args = [np.zeros((1,), d) for d in dtypes]
    with np.errstate(all="ignore"):
        return np.asarray(kernel(*args)).dtype


def elementwise_infer(kernel, name):
    def infer(*avals, **attrs):
        shape = broadcast_shapes(*(a.shape for a in avals), opname=name)
        return Aval(shape, probe_dtype(kernel, *(np.dtype(a.dtype) for a in avals)))
    return infer


def same_infer(x, **attrs):
    return Aval(tuple(x.shape), x.dtype)


def unbroadcast(g, x):
    """Reduce a cotangent `g` to the shape of operand `x` (undo broadcasting)."""
    gs, xs = tuple(g.shape), tuple(x.shape)
    if gs == xs and None not in xs:
        return g
    return bind("sum_to_like", g, x)
