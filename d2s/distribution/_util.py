"""Helpers every distribution shares: turning parameters into tensors of one
dtype, broadcasting them, and the dims of a sample's shape (Python ints, or
run-time dims where a converted program's input has a None dim).

Built only from d2s.core's ops, so a distribution used inside converted code
becomes ordinary ops of the program (gradients, xla, ONNX come from them)."""
from __future__ import annotations

import numbers

import numpy as np

from ..core import ops as _ops
from ..core.ops._base import lift
from ..core.ops.search import _dim


def _is_number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def as_float(v, dtype=None):
    """`v` (a number, list, numpy array or tensor) as a float tensor. Python
    numbers and lists become float32 (Paddle's default); numpy arrays and
    tensors keep a float dtype, integers become float32; `dtype` casts."""
    if _is_number(v) or isinstance(v, (list, tuple)):
        t = lift(np.asarray(v, dtype=np.dtype(dtype or "float32")))
    else:
        t = lift(v)
    if dtype is not None and np.dtype(t.dtype) != np.dtype(dtype):
        return _ops.cast(t, np.dtype(dtype).name)
    if np.dtype(t.dtype).kind != "f":
        return _ops.cast(t, "float32")
    return t


def params(*values):
    """The parameters as float tensors of one dtype (the widest tensor's; a
    Python number takes the other parameters' dtype), broadcast together."""
    dtype = None
    for v in values:
        if not (_is_number(v) or isinstance(v, (list, tuple))):
            k = np.dtype(lift(v).dtype)
            if k.kind == "f" and (dtype is None or k.itemsize > dtype.itemsize):
                dtype = k
    ts = [as_float(v, dtype) for v in values]
    if len(ts) == 1:
        return ts
    return list(_ops.broadcast_tensors(ts))


def like(value, ref):
    """`value` as a tensor of `ref`'s float dtype."""
    return as_float(value, np.dtype(ref.dtype))


def dims(x, start=0, stop=None):
    """x's dims [start:stop] as a shape list (an int, or the run-time dim of
    a None dim)."""
    n = len(x.shape)
    start = start if start >= 0 else n + start
    stop = n if stop is None else (stop if stop >= 0 else n + stop)
    return [x.shape[i] if x.shape[i] is not None else _dim(x, i) for i in range(start, stop)]


def sample_shape(shape, name):
    """The sample shape argument as a list (Paddle takes a list or tuple; an
    int is read as one dim)."""
    if isinstance(shape, (list, tuple)):
        return list(shape)
    if isinstance(shape, numbers.Integral):
        return [int(shape)]
    raise TypeError(f"{name}: the sample shape must be a list or tuple of ints, got {shape!r}")


def sum_last(x, n):
    """x summed over its last `n` dims (n >= 0)."""
    for _ in range(n):
        x = _ops.sum(x, -1)
    return x


def size_of(x, axis):
    """x.shape[axis] as a number for arithmetic: a float where the dim is
    known while building, else the run-time dim cast to x's dtype."""
    d = x.shape[axis]
    if d is not None:
        return float(d)
    return _ops.cast(_dim(x, axis), np.dtype(x.dtype).name)


def check(cls_name, what, t, predicate, rule):
    """Raise ValueError if the eager tensor `t` breaks `predicate` (a numpy
    test) anywhere; values computed inside a converted program are not
    known while building and are not checked."""
    from ..core.tensor import Tensor
    if isinstance(t, Tensor) and t.size:
        v = t.numpy()
        bad = ~predicate(v)
        if bad.any():
            where = f" at index {np.argwhere(bad)[0].tolist()}" if v.ndim else ""
            raise ValueError(f"{cls_name}: {what} must be {rule}, got "
                             f"{float(v[bad].ravel()[0])!r}{where}")
