"""Creation ops: constants, fills, ranges, shape queries."""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..dtypes import DEFAULT_FLOAT, as_dtype, default_dtype_for
from ..registry import Aval, register_op
from ._base import lift


def _full_kernel(shape, fill_value, dtype):
    return np.full(shape, fill_value, dtype=dtype)


def onnx_fill(ns, dims, fill_value, dtype):
    """ONNX: the scalar `fill_value` expanded to `dims` (ints or int64 values);
    a small fill of known shape is a constant."""
    if all(isinstance(d, int) for d in dims) and np.prod(dims, dtype=np.int64) <= 16:
        return ns.const(np.full(dims, fill_value, dtype))
    return ns.node("Expand", ns.scalar(fill_value, dtype), ns.shape_vector(dims))


def _full_onnx(ns, *dims, shape, fill_value, dtype):
    dynamic = iter(dims)  # a None in `shape` is the next run-time dim
    return onnx_fill(ns, [next(dynamic) if d is None else d for d in shape], fill_value, dtype)


register_op("full", _full_kernel,
            lambda shape, fill_value, dtype: Aval(tuple(shape), np.dtype(dtype))).lowering(
    xla=lambda ns, shape, fill_value, dtype: ns.jnp.full(shape, fill_value, dtype),
    onnx=_full_onnx)


def _assign_value_kernel(value):
    return value


register_op("assign_value", _assign_value_kernel,
            lambda value: Aval(value.shape, value.dtype),
            doc="A constant array embedded in the program.").lowering(
    xla=lambda ns, value: value,  # a numpy constant: the backend embeds it
    onnx=lambda ns, value: ns.const(value))


def _full_like_kernel(x, fill_value, dtype=None):
    return np.full(x.shape, fill_value, dtype=dtype or x.dtype)


register_op("full_like", _full_like_kernel,
            lambda x, fill_value, dtype=None: Aval(tuple(x.shape), np.dtype(dtype or x.dtype)),
            vjp=lambda g, out, x, fill_value, dtype=None: (None,)).lowering(
    xla=lambda ns, x, fill_value, dtype=None: ns.jnp.full(x.shape, fill_value, dtype or x.dtype),
    onnx=lambda ns, x, fill_value, dtype=None: onnx_fill(
        ns, [ns.dim(x, i) for i in range(x.ndim)], fill_value, dtype or x.dtype))


def _shape_list(shape):
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(d) for d in shape)


def full(shape, fill_value, dtype=None):
    dtype = as_dtype(dtype) if dtype is not None else default_dtype_for(fill_value)
    return bind("full", shape=_shape_list(shape), fill_value=fill_value, dtype=dtype.name)


def zeros(shape, dtype="float32"):
    return full(shape, 0, as_dtype(dtype))


def ones(shape, dtype="float32"):
    return full(shape, 1, as_dtype(dtype))


def full_like(x, fill_value, dtype=None):
    return bind("full_like", lift(x), fill_value=fill_value,
                dtype=None if dtype is None else as_dtype(dtype).name)


def zeros_like(x, dtype=None):
    return full_like(x, 0, dtype)


def ones_like(x, dtype=None):
    return full_like(x, 1, dtype)


def _arange_kernel(start, end, step, dtype):
    return np.arange(start, end, step, dtype=dtype)


def _arange_infer(start, end, step, dtype):
    return Aval((max(0, int(np.ceil((end - start) / step))),), np.dtype(dtype))


# The values are known from the attributes: numpy's own arange is the constant.
def _arange_onnx(ns, *bounds, start, end, step, dtype):
    if not bounds:
        return ns.const(_arange_kernel(start, end, step, dtype))
    dynamic = iter(bounds)  # a None bound is the next run-time input
    start, end, step = (ns.node("Reshape", ns.cast(next(dynamic), dtype), ns.ints([]))
                        if b is None else ns.scalar(b, dtype) for b in (start, end, step))
    return ns.node("Range", start, end, step)


register_op("arange", _arange_kernel, _arange_infer).lowering(
    xla=lambda ns, **attrs: _arange_kernel(**attrs), onnx=_arange_onnx)


def arange(start=0, end=None, step=1, dtype=None):
    """Like paddle.arange: `arange(5)`, `arange(1, 5, 2)`; bounds are Python numbers
    (eager tensors are read as numbers)."""
    if end is None:
        start, end = 0, start
    start, end, step = (x.item() if hasattr(x, "item") and not isinstance(x, (int, float)) else x
                        for x in (start, end, step))
    if dtype is None:
        dtype = (DEFAULT_FLOAT if any(isinstance(v, float) for v in (start, end, step))
                 else np.dtype("int64"))
    return bind("arange", start=start, end=end, step=step, dtype=as_dtype(dtype).name)


def _shape_kernel(x):
    return np.array(x.shape, dtype=np.int64)


register_op("shape", _shape_kernel, lambda x: Aval((len(x.shape),), np.dtype("int64"))).lowering(
    xla=lambda ns, x: ns.shape_of(x),  # a constant, or a tensor array's run-time length
    onnx=lambda ns, x: ns.shape_of(x))


def shape(x):
    """The shape of `x` as an int64 tensor (dynamic dims resolved at run time)."""
    return bind("shape", lift(x))


def _numel_kernel(x, axes=None):
    dims = x.shape if axes is None else [x.shape[a] for a in axes]
    return np.array(int(np.prod(dims)), dtype=np.int64)


def _numel_onnx(ns, x, axes=None):
    axes = range(x.ndim) if axes is None else axes
    dims = [ns.dim(x, a) for a in axes]
    if all(isinstance(d, int) for d in dims):
        return ns.const(np.array(int(np.prod(dims)), dtype=np.int64))
    return ns.node("ReduceProd", ns.shape_vector(dims), keepdims=0)


register_op("numel", _numel_kernel, lambda x, axes=None: Aval((), np.dtype("int64"))).lowering(
    xla=lambda ns, x, axes=None: _numel_kernel(x, axes),  # static shapes: a constant
    onnx=_numel_onnx)


def numel(x, axes=None):
    """Number of elements of `x` (over `axes` if given), as an int64 scalar."""
    return bind("numel", lift(x), axes=None if axes is None else tuple(axes))
