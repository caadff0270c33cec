"""Helpers shared by the op families: operand lifting and common rules."""
from __future__ import annotations

import functools

import numpy as np

from ..dispatch import Symbolic, bind
from ..dtypes import (as_dtype, default_dtype_for, dtype_name, is_python_scalar,
                      weak_scalar_dtype)
from ..registry import Aval
from ..shapes import broadcast_shapes
from ..tensor import Tensor


_VALUE_TYPES = (Tensor, Symbolic)


def is_value(x):
    """A d2s value (eager Tensor or static Variable)."""
    return isinstance(x, _VALUE_TYPES)


class NumberMemo:
    """What `make(value, dtype)` gives for a Python number, remembered by
    (type, value, dtype): every number next to a tensor in a trace is a
    constant, and making its 0-d array costs microseconds. Float zeros are
    never keys (0.0 == -0.0, but their signs differ); `make` returning None
    says "do not remember" (the caller then makes it itself). Bounded: past
    `LIMIT` entries it starts afresh."""
    __slots__ = ("_found", "_make")
    LIMIT = 4096

    def __init__(self, make):
        self._found = {}
        self._make = make

    def get(self, value, dtype):
        """The remembered result, or None for a value that is no Python number
        (a float zero included) or that `make` declined."""
        t = type(value)
        if not ((t is float or t is int or t is bool) and (value or t is not float)):
            return None
        key = (t, value, dtype)
        found = self._found.get(key)
        if found is None:
            found = self._make(value, dtype)
            if found is None:
                return None
            if len(self._found) >= self.LIMIT:
                self._found.clear()
            self._found[key] = found
        return found


def _fill_of(value, dtype):
    arr = np.asarray(value, dtype=as_dtype(dtype) if dtype is not None
                     else default_dtype_for(value))
    return arr.item(), dtype_name(arr.dtype)


# A Python number -> (the number as the dtype asked holds it, the dtype's name).
_SCALAR_FILLS = NumberMemo(_fill_of)


def constant(value, dtype=None):
    """A constant as a d2s value: an eager Tensor, or a constant op in a program.

    A Python number made a constant without an explicit dtype is weakly typed
    in a program (see `is_weak`)."""
    fill = _SCALAR_FILLS.get(value, dtype)  # a Python number: (value in its dtype, dtype name)
    if fill is None:
        arr = np.asarray(value, dtype=as_dtype(dtype) if dtype is not None
                         else default_dtype_for(value))
        if arr.ndim:
            return bind("assign_value", value=arr)
        fill = (arr.item(), dtype_name(arr.dtype))
    out = bind("full", shape=(), fill_value=fill[0], dtype=fill[1])
    if dtype is None and isinstance(out, Symbolic) and is_python_scalar(value):
        out.weak = True
    return out


def is_weak(x):
    """Static Variables standing for Python numbers (eager Tensors never are)."""
    return getattr(x, "weak", False)


def _strengthen(weak, strong):
    """Cast a weak value to the dtype its Python number would get next to `strong`."""
    dtype = _strengthened_dtype(weak.dtype, strong.dtype)
    if dtype is None:
        return weak
    return bind("cast", weak, dtype=dtype.name)


@functools.lru_cache(maxsize=None)
def _strengthened_dtype(weak_dtype, strong_dtype):
    """What `_strengthen` casts to (None: nothing), per dtype pair: asked for
    every Python number next to a tensor in a trace, and `np.result_type`
    costs microseconds."""
    kind = np.dtype(weak_dtype).kind
    sample = 1.0 if kind == "f" else (True if kind == "b" else 1)
    dtype = np.result_type(np.dtype(strong_dtype), sample)
    return None if dtype == np.dtype(weak_dtype) else dtype


def mark_weak(out, *inputs):
    """Results computed only from weak values stay weak."""
    # A loop, not all(generator): asked after every elementwise op of a trace,
    # and the usual answer (the first input is not weak) is found at once.
    if not inputs:
        return out
    for x in inputs:
        if not getattr(x, "weak", False):
            return out
    if isinstance(out, Symbolic):
        out.weak = True
    return out


def lift(x, like=None):
    """Turn a Python scalar / array into a d2s value; scalars are weak next to `like`."""
    if type(x) is Tensor or is_value(x):
        return x
    if is_python_scalar(x) and like is not None:
        return _lift_number(x, like)
    return constant(x)


def _lift_number(value, like):
    """A Python number facing the value `like`: a weak constant of the dtype
    the number takes next to it. The usual operand in a trace (`x * 0.5`)."""
    out = constant(value, weak_scalar_dtype(like.dtype, value))
    if isinstance(out, Symbolic):
        out.weak = True  # still a Python number: `weak + 1` stays weak
    return out


_NUMBER_TYPES = frozenset((bool, int, float))


def lift_pair(x, y):
    if isinstance(x, _VALUE_TYPES):
        if not isinstance(y, _VALUE_TYPES):
            y = _lift_number(y, x) if type(y) in _NUMBER_TYPES else lift(y, like=x)
    elif isinstance(y, _VALUE_TYPES):
        x = _lift_number(x, y) if type(x) in _NUMBER_TYPES else lift(x, like=y)
    else:
        return lift(x), lift(y)
    wx, wy = getattr(x, "weak", False), getattr(y, "weak", False)  # is_weak, inline
    if wx and not wy:
        x = _strengthen(x, y)
    elif wy and not wx:
        y = _strengthen(y, x)
    return x, y


@functools.lru_cache(maxsize=4096)
def probe_dtype(kernel, *dtypes):
    """The kernel is the dtype rule: run it on empty arrays of these dtypes."""
    args = [np.zeros((1,), d) for d in dtypes]
    with np.errstate(all="ignore"):
        return np.asarray(kernel(*args)).dtype


def elementwise_infer(kernel, name):
    # Binary ops of a trace ask about the same few (shape, dtype) pairs again
    # and again: remembered per op (an Aval is immutable), a handful of entries.
    pairs = {}

    def infer(*avals, **attrs):
        if len(avals) == 2:
            a, b = avals
            key = (a.shape, b.shape, a.dtype, b.dtype)
            found = pairs.get(key)
            if found is None:
                if len(pairs) >= 1024:
                    pairs.clear()
                found = pairs[key] = _elementwise_aval(kernel, name, avals)
            return found
        return _elementwise_aval(kernel, name, avals)
    return infer


def _elementwise_aval(kernel, name, avals):
    shape = broadcast_shapes(*(a.shape for a in avals), opname=name)
    return Aval(shape, probe_dtype(kernel, *(np.dtype(a.dtype) for a in avals)))


def same_infer(x, **attrs):
    return Aval(tuple(x.shape), x.dtype)


def grad_discarded(x):
    """True for an eager Tensor that takes no gradient: the tape drops any
    cotangent a rule returns for it, so a rule whose parts are costly (matmul)
    may skip that part. Static backward prunes unneeded grads itself (DCE),
    so for Variables this is always False."""
    return type(x) is Tensor and x.stop_gradient


def cast_like(g, x):
    """Cotangent `g` in the dtype of its primal `x` (mixed-precision ops promote)."""
    if np.dtype(g.dtype) == np.dtype(x.dtype):
        return g
    return bind("cast", g, dtype=np.dtype(x.dtype).name)


def unbroadcast(g, x):
    """Reduce a cotangent `g` to the shape of operand `x` (undo broadcasting)."""
    gs, xs = tuple(g.shape), tuple(x.shape)
    if gs == xs and None not in xs:
        return g
    return bind("sum_to_like", g, x)
