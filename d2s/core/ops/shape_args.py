"""Shape (and range) arguments that mix Python ints with dims known only at run time.

Real models write `x.reshape([x.shape[0], -1])` or `d2s.zeros([b, 3])` where
`b` comes from an `InputSpec` dim that is `None`: in a program it is an
int64 scalar Variable. Such an argument is split once, here, into

* a static spec: a tuple holding the Python ints, and `None` where a dim is
  dynamic (shape rules read it: `None` is an unknown dim), and
* the dynamic dims themselves, in order, which become *op inputs* (so passes,
  backward and serialization see a real data dependency, as Paddle's
  `ShapeTensor` list does).

The kernel puts the run-time values back with `fill_spec`. In eager mode
every entry is a Python int (an eager int tensor is read as one), so the op
has no extra inputs and nothing changes.
"""
from __future__ import annotations

import operator

import numpy as np

from ..dispatch import Symbolic
from ..tensor import Tensor


def note_dim(dim, value, axis):
    """Record on the static scalar `dim` that it is `value.shape[axis]` at run
    time: `reshape` then resolves `x.reshape([x.shape[0], -1])` to a known
    trailing dim while building (the unknown batch dim cancels out)."""
    dim.dim_of = (value, axis)


def dim_source(dim):
    """`(value, axis)` if `dim` is known to be `value.shape[axis]`, else None."""
    return getattr(dim, "dim_of", None)


def _integer_scalar(value, opname, what):
    dtype = np.dtype(value.dtype)
    if not (np.issubdtype(dtype, np.integer) or dtype == np.bool_) or value.size not in (1, None):
        raise TypeError(f"{opname}: {what} must be an int or an integer scalar tensor, got a "
                        f"{dtype.name} tensor of shape {list(value.shape)}")


def split_shape(shape, opname):
    """`(spec, dims)` for a shape given as an int, a list/tuple of ints and
    integer scalar tensors, or a 1-D integer tensor (see the module doc)."""
    if isinstance(shape, Symbolic):
        return _split_shape_variable(shape, opname)
    if isinstance(shape, Tensor):
        _check_shape_tensor(shape, opname)
        return tuple(int(d) for d in np.asarray(shape.numpy()).reshape(-1)), ()
    if not isinstance(shape, (list, tuple)):
        return (_python_dim(shape, opname, "a shape"),), ()
    for d in shape:  # the common eager case, all Python ints, kept fast
        if type(d) is not int:
            break
    else:
        return tuple(shape), ()
    spec, dims = [], []
    for i, d in enumerate(shape):
        if isinstance(d, Symbolic):
            _integer_scalar(d, opname, f"shape entry {i}")
            spec.append(None)
            dims.append(d)
        else:
            spec.append(_python_dim(d, opname, f"shape entry {i}"))
    return tuple(spec), tuple(dims)


def _python_dim(d, opname, what):
    if isinstance(d, Tensor):
        _integer_scalar(d, opname, what)
        return int(d.numpy().reshape(()))
    try:
        return operator.index(d)
    except TypeError:
        raise TypeError(f"{opname}: {what} must be an int or an integer scalar tensor, "
                        f"got {type(d).__name__} {d!r}") from None


def _check_shape_tensor(shape, opname):
    dtype = np.dtype(shape.dtype)
    if not np.issubdtype(dtype, np.integer) or len(shape.shape) > 1:
        raise TypeError(f"{opname}: a shape given as a tensor must be a 1-D integer tensor, "
                        f"got {dtype.name}{list(shape.shape)}")


def _split_shape_variable(shape, opname):
    """A whole shape as a Variable (`d2s.shape(y)`): one input per entry, so
    its length must be known while building."""
    _check_shape_tensor(shape, opname)
    if not shape.shape:
        return (None,), (shape,)
    n = shape.shape[0]
    if n is None:
        raise ValueError(f"{opname}: a shape given as a tensor needs a length known while the "
                         "program is built (its rank is the result's rank)")
    return (None,) * n, tuple(shape[i] for i in range(n))


def split_scalars(values, opname, names):
    """`(spec, dynamic)` for scalar arguments (range bounds): numbers stay in
    the spec, static Variables are `None` there and become op inputs; eager
    tensors are read as numbers."""
    spec, dynamic = [], []
    for value, name in zip(values, names):
        if isinstance(value, Symbolic):
            if value.size not in (1, None):
                raise TypeError(f"{opname}: {name} must be a scalar, got a tensor of shape "
                                f"{list(value.shape)}")
            spec.append(None)
            dynamic.append(value)
        elif isinstance(value, (Tensor, np.generic)):
            spec.append(value.item())
        else:
            spec.append(value)
    return tuple(spec), tuple(dynamic)


def fill_spec(spec, values, convert=int):
    """Kernel side: `spec` with each `None` replaced by the next run-time value."""
    if not values:
        return tuple(spec)
    it = iter(values)
    return tuple(convert(np.asarray(next(it)).reshape(())) if d is None else d for d in spec)


def format_spec(spec):
    """A spec as the user wrote it: `[?, 3, -1]` (`?` where a dim is dynamic)."""
    return "[" + ", ".join("?" if d is None else str(d) for d in spec) + "]"
