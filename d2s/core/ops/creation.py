"""Creation ops: constants, fills, ranges, shape queries."""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..dtypes import DEFAULT_FLOAT, as_dtype, default_dtype_for, dtype_name, named_dtype
from ..registry import Aval, register_op
from ._base import NumberMemo, is_value, lift
from .shape_args import fill_spec, format_spec, split_scalars, split_shape


def _full_kernel(*dims, shape, fill_value, dtype):
    # np.full's own steps for a given dtype, without its per-call overhead and
    # dtype parsing: every constant of a program is folded through here.
    if not shape and not dims:
        return _scalar_full(fill_value, dtype)
    out = np.empty(fill_spec(shape, dims), named_dtype(dtype))
    np.copyto(out, fill_value, casting="unsafe")
    return out


def _read_only_scalar(fill_value, dtype):
    """A 0-d fill as a read-only array to copy from, or None for a value that
    overflows the dtype (numpy then warns on every call, as it should)."""
    found = np.empty((), named_dtype(dtype))
    with np.errstate(all="ignore"):
        np.copyto(found, fill_value, casting="unsafe")
    kind = found.dtype.kind
    if kind not in "biu" and not (kind in "fc" and np.isfinite(found)):
        return None
    found.flags.writeable = False
    return found


# A 0-d fill of a Python number -> that array, read-only: an interpreted run (a
# `to_static` function's first call) evaluates each constant of a trace on every
# loop trip, and a copy costs a fifth of making one.
_SCALAR_FULLS = NumberMemo(_read_only_scalar)


def _scalar_full(fill_value, dtype):
    found = _SCALAR_FULLS.get(fill_value, dtype)
    if found is not None:
        return found.copy()
    out = np.empty((), named_dtype(dtype))
    np.copyto(out, fill_value, casting="unsafe")
    return out


def _full_infer(*dims, shape, fill_value, dtype):
    # Every constant of a trace is a `full`: a loop, and the dtype by its name;
    # a 0-d one (a Python number) has one Aval per dtype (Avals are immutable).
    if not shape:
        aval = _SCALAR_AVALS.get(dtype)
        if aval is None:
            if len(_SCALAR_AVALS) >= 256:
                _SCALAR_AVALS.clear()
            aval = _SCALAR_AVALS[dtype] = Aval((), named_dtype(dtype))
        return aval
    for d in shape:
        if d is not None and d < 0:
            raise ValueError(f"full: negative dim in shape {format_spec(shape)}")
    return Aval(tuple(shape), named_dtype(dtype))


_SCALAR_AVALS = {}  # dtype as `full` names it -> Aval((), that dtype)


# `shape` holds None where a dim is given at run time by the next input (shape_args).
register_op("full", _full_kernel, _full_infer,
            checks=lambda op: bool(op.inputs))  # dims from tensors: negative?


def _assign_value_kernel(value):
    return value


# A constant array embedded in the program.
register_op("assign_value", _assign_value_kernel,
            lambda value: Aval(value.shape, value.dtype))


def _full_like_kernel(x, fill_value, dtype=None):
    return np.full(x.shape, fill_value, dtype=dtype or x.dtype)


register_op("full_like", _full_like_kernel,
            lambda x, fill_value, dtype=None: Aval(tuple(x.shape), np.dtype(dtype or x.dtype)),
            vjp=lambda g, out, x, fill_value, dtype=None: (None,),
            elementwise=True)  # (each element depends on none of x's)


def full(shape, fill_value, dtype=None):
    """`shape`: an int, a list of ints and integer scalar tensors (dims known at
    run time), or a 1-D integer tensor. `fill_value` may be a one-element
    tensor (a traced value in a program): as in PaddlePaddle, its value is
    read, with no gradient path, and the dtype defaults to its own."""
    if is_value(fill_value):
        return _full_of_tensor(shape, fill_value, dtype)
    dtype = as_dtype(dtype) if dtype is not None else default_dtype_for(fill_value)
    spec, dims = split_shape(shape, "full")
    return bind("full", *dims, shape=spec, fill_value=fill_value, dtype=dtype_name(dtype))


def _full_of_tensor(shape, fill, dtype):
    from .elementwise import cast
    from .manipulation import detach, expand, reshape
    dims = tuple(fill.shape)
    if dims and None not in dims and int(np.prod(dims)) != 1:
        raise ValueError(f"full: the fill value must be a one-element tensor, got one of "
                         f"shape {list(dims)}")
    value = detach(reshape(fill, []) if dims else fill)
    if dtype is not None and as_dtype(dtype) != np.dtype(fill.dtype):
        value = cast(value, as_dtype(dtype).name)
    return expand(value, shape if isinstance(shape, (list, tuple)) or is_value(shape)
                  else [shape])


def zeros(shape, dtype="float32"):
    return full(shape, 0, as_dtype(dtype))


def ones(shape, dtype="float32"):
    return full(shape, 1, as_dtype(dtype))


def full_like(x, fill_value, dtype=None):
    """`fill_value` may be a one-element tensor, read as in `full`; the dtype
    defaults to x's."""
    x = lift(x)
    if is_value(fill_value):
        dims = tuple(x.shape)
        return _full_of_tensor(list(dims) if None not in dims else shape(x), fill_value,
                               x.dtype if dtype is None else dtype)
    return bind("full_like", lift(x), fill_value=fill_value,
                dtype=None if dtype is None else as_dtype(dtype).name)


def zeros_like(x, dtype=None):
    return full_like(x, 0, dtype)


def ones_like(x, dtype=None):
    return full_like(x, 1, dtype)


def _arange_kernel(*bounds, start, end, step, dtype):
    start, end, step = fill_spec((start, end, step), bounds, convert=lambda a: a.item())
    return np.arange(start, end, step, dtype=dtype)


def _arange_infer(*bounds, start, end, step, dtype):
    if step == 0:
        raise ValueError("arange: step must not be 0")
    if None in (start, end, step):
        return Aval((None,), np.dtype(dtype))
    return Aval((max(0, int(np.ceil((end - start) / step))),), np.dtype(dtype))


# A bound that is None is given at run time by the next input (shape_args).
register_op("arange", _arange_kernel, _arange_infer,
            checks=lambda op: bool(op.inputs))  # bounds from tensors: a 0 step?


def arange(start=0, end=None, step=1, dtype=None):
    """Like paddle.arange: `arange(5)`, `arange(1, 5, 2)`; bounds are numbers or
    scalar tensors (eager ones are read as numbers; static ones, e.g. a dynamic
    `x.shape[0]`, are inputs of the op)."""
    if end is None:
        start, end = 0, start
    spec, bounds = split_scalars((start, end, step), "arange", ("start", "end", "step"))
    if dtype is None:
        floating = any(isinstance(v, float) for v in spec) or any(
            np.issubdtype(np.dtype(b.dtype), np.floating) for b in bounds)
        dtype = DEFAULT_FLOAT if floating else np.dtype("int64")
    return bind("arange", *bounds, start=spec[0], end=spec[1], step=spec[2],
                dtype=as_dtype(dtype).name)


def _shape_kernel(x):
    return np.array(x.shape, dtype=np.int64)


register_op("shape", _shape_kernel, lambda x: Aval((len(x.shape),), np.dtype("int64")))


def shape(x):
    """The shape of `x` as an int64 tensor (dynamic dims resolved at run time)."""
    return bind("shape", lift(x))


def _numel_kernel(x, axes=None):
    dims = x.shape if axes is None else [x.shape[a] for a in axes]
    return np.array(int(np.prod(dims)), dtype=np.int64)


register_op("numel", _numel_kernel, lambda x, axes=None: Aval((), np.dtype("int64")))


def numel(x, axes=None):
    """Number of elements of `x` (over `axes` if given), as an int64 scalar."""
    return bind("numel", lift(x), axes=None if axes is None else tuple(axes))
