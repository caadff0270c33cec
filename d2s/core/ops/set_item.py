"""Item assignment as a functional op: `set_item(x, v, *tensors, spec)` is a
copy of `x` with `v` (broadcast, cast to x's dtype) written where the index
`spec` points (the encoding `getitem` uses, see `indexing.encode_index`).

Why functional: a program has no mutable arrays, so `x[i] = v` in converted
code rebinds `x` to this op's result, and eager `Tensor.__setitem__` rebinds
the Tensor's value to it (see `core.inplace`). Both x and v get gradients:
x's is the cotangent with the written region zeroed, v's the cotangent read
at the index, summed to v's shape. (With repeated integer indices numpy's
last write wins; v's gradient then counts every repeat.)
"""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ._base import cast_like, constant, lift, unbroadcast
from .indexing import (INDEX_SPEC, _check_tensor_count, decode_index, encode_index,
                       getitem_shape)


def _check_fits(value_shape, target_shape):
    """numpy's rule for `x[idx] = v`: v broadcasts to the indexed shape
    (leading size-1 dims of v may be dropped). Unknown dims pass."""
    v = tuple(value_shape)
    while len(v) > len(target_shape) and v[0] in (1, None):
        v = v[1:]
    ok = len(v) <= len(target_shape) and all(
        a in (1, None) or b is None or a == b
        for a, b in zip(reversed(v), reversed(tuple(target_shape))))
    if not ok:
        raise ValueError(f"set_item: a value of shape {tuple(value_shape)} does not broadcast "
                         f"into the indexed region of shape {tuple(target_shape)}")


def _kernel(x, v, *tensors, spec):
    out = np.array(x, copy=True)
    index = decode_index(spec, tensors)
    if index and all(type(i) is int for i in index) and len(index) <= out.ndim:
        target = out.shape[len(index):]
    else:
        target = out[index].shape
    _check_fits(np.shape(v), target)
    v = np.asarray(v)
    if v.ndim > len(target):  # numpy drops them for a region, not for one element
        v = v.reshape(v.shape[v.ndim - len(target):])
    out[index] = v
    return out


def _infer(x, v, *tensors, spec):
    _check_tensor_count(spec, tensors)
    target = getitem_shape(x.shape, spec, tensors, opname="set_item")
    _check_fits(v.shape, target)
    return Aval(tuple(x.shape), x.dtype)


def _vjp(g, out, x, v, *tensors, spec):
    gx = bind("set_item", g, constant(0, np.dtype(g.dtype).name), *tensors, spec=spec)
    gv = None
    if np.issubdtype(np.dtype(v.dtype), np.inexact):
        picked = bind("getitem", g, *tensors, spec=spec)
        extra = len(v.shape) - len(picked.shape)
        if extra > 0:  # v's leading size-1 dims, which numpy dropped
            from .manipulation import unsqueeze
            picked = unsqueeze(picked, list(range(extra)))
        gv = unbroadcast(cast_like(picked, v), v)
    return (gx, gv) + (None,) * len(tensors)


# xla and ONNX rules: d2s/backends/xla/rules/indexing.py, d2s/onnx/rules/indexing.py
register_op("set_item", _kernel, _infer, vjp=_vjp, checks=True, attrs={"spec": INDEX_SPEC})


def set_item(x, index, value):
    """A copy of `x` with `x[index] = value` applied (functional; the value is
    cast to x's dtype). Eager `x[index] = value` and converted code use it."""
    x = lift(x)
    spec, tensors = encode_index(index)
    value = lift(value, like=x)
    if np.dtype(value.dtype) != np.dtype(x.dtype) and not np.issubdtype(
            np.dtype(x.dtype), np.inexact):
        value = bind("cast", value, dtype=np.dtype(x.dtype).name)
    return bind("set_item", x, value, *tensors, spec=spec)


__all__ = ["set_item"]
