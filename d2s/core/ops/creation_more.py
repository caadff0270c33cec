"""More creation ops, each a constant or a composition of existing ops:
linspace, eye, empty, empty_like, assign, clone; and one_hot, a primitive
(rows of the identity read in one call: its xla and ONNX rules are in the
targets' `rules/creation.py`)."""
from __future__ import annotations

import functools

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..dtypes import DEFAULT_FLOAT, as_dtype
from ._base import constant, is_value, lift

__all__ = ["linspace", "eye", "empty", "empty_like", "assign", "one_hot", "clone"]


def _number(v, opname, what):
    if is_value(v):
        from ..tensor import Tensor
        if isinstance(v, Tensor) and v.size == 1:
            return v.item()
        raise TypeError(f"{opname}: {what} must be known while building (a number or an "
                        "eager tensor), got a tensor computed in the program")
    return v


def linspace(start, stop, num, dtype=None, name=None):
    """`num` evenly spaced numbers from `start` to `stop` inclusive (a
    constant: numpy's linspace, float32 unless `dtype`)."""
    start, stop = _number(start, "linspace", "start"), _number(stop, "linspace", "stop")
    num = _number(num, "linspace", "num")
    if isinstance(num, bool) or not isinstance(num, (int, np.integer)) or num < 0:
        raise ValueError(f"linspace: num must be a non-negative int, got {num!r}")
    dtype = DEFAULT_FLOAT if dtype is None else as_dtype(dtype)
    return constant(np.linspace(start, stop, int(num)).astype(dtype), dtype)


def eye(num_rows, num_columns=None, dtype=None, name=None):
    """The identity matrix (ones on the diagonal), float32 unless `dtype`.
    A size computed by the program (`eye(2 * n)` with `n` a dynamic batch
    size, as contrastive losses mask their diagonal) builds it from two
    aranges compared, so one program serves every size."""
    if _traced(num_rows) or _traced(num_columns):
        return _eye_of_run_time_size(num_rows, num_rows if num_columns is None else num_columns,
                                     DEFAULT_FLOAT if dtype is None else as_dtype(dtype))
    rows = int(_number(num_rows, "eye", "num_rows"))
    cols = rows if num_columns is None else int(_number(num_columns, "eye", "num_columns"))
    if rows < 0 or cols < 0:
        raise ValueError(f"eye: sizes must be >= 0, got {rows} x {cols}")
    dtype = DEFAULT_FLOAT if dtype is None else as_dtype(dtype)
    return constant(np.eye(rows, cols, dtype=dtype), dtype)


def _traced(v):
    """A value of the program being built (not a number, not an eager Tensor)."""
    from ..tensor import Tensor
    return is_value(v) and not isinstance(v, Tensor)


def _eye_of_run_time_size(rows, cols, dtype):
    from . import arange, cast, equal, unsqueeze
    for v, what in ((rows, "num_rows"), (cols, "num_columns")):
        if is_value(v) and (tuple(v.shape) not in ((), (1,))
                            or not np.issubdtype(np.dtype(v.dtype), np.integer)):
            raise TypeError(f"eye: {what} must be an int or a one-element int tensor, got "
                            f"shape {list(v.shape)} of {np.dtype(v.dtype).name}")
    r = arange(0, rows if not is_value(rows) else rows.reshape([]), 1, dtype="int64")
    c = arange(0, cols if not is_value(cols) else cols.reshape([]), 1, dtype="int64")
    return cast(equal(unsqueeze(r, 1), unsqueeze(c, 0)), dtype)


def empty(shape, dtype=None, name=None):
    """A tensor of `shape` (its values unspecified: zeros here)."""
    from .creation import zeros
    return zeros(shape, DEFAULT_FLOAT if dtype is None else dtype)


def empty_like(x, dtype=None, name=None):
    """A tensor shaped like `x` (its values unspecified: zeros here)."""
    from .creation import zeros_like
    return zeros_like(x, dtype)


def assign(x, output=None):
    """A copy of `x` (a tensor, array, list or number), differentiable; with
    `output` (an eager Tensor of the same shape) the copy is written into it
    in place and `output` is returned."""
    if is_value(x):
        out = bind("reshape_like", x, x)  # the identity, with a gradient and every lowering
    else:
        arr = np.asarray(x)
        if arr.dtype == np.float64 and not isinstance(x, np.ndarray):
            arr = arr.astype(DEFAULT_FLOAT)
        out = constant(arr, arr.dtype)
    if output is not None:
        # PaddlePaddle's `assign(x, output=buf)`, how ported layers update a
        # buffer in forward: an in-place write of the copy into `output` (an
        # effect of the program while one is traced, replayed after each run)
        from .. import inplace
        from ..tensor import Tensor
        if type(output) is Tensor:
            return inplace.apply(output, lambda _: out, "assign(x, output=...)")
        if not is_value(output):
            raise TypeError(f"assign: output must be a Tensor, got {type(output).__name__}")
        # a value of a program: functional, as for an in-place method; converted
        # code rebinds the output's name to the result (`paddle.assign(x, y)`
        # statements). Where nothing rebinds it (`assign(g, p.grad)` in a
        # converted step) a to_static trace writes the value in place, as
        # `output[...] = x` does, so every holder reads it; elsewhere it is a
        # clear error
        from .. import effects
        if (not getattr(inplace._rebinding, "on", False) and effects.overlay() is not None
                and hasattr(output, "_write_in_place") and not getattr(output, "is_data", False)):
            inplace._conform(out, output, "assign(x, output=...)", True)
            output[...] = out
            return output
        return inplace.method(output, "assign", lambda v: inplace._conform(
            out, v, "assign(x, output=...)", True))
    return out


def clone(x, name=None):
    """A copy of `x` that keeps its gradient path."""
    return bind("reshape_like", lift(x), lift(x))


def one_hot(x, num_classes, name=None):
    """float32 one-hot rows: `out[..., c] = (x[...] == c)` for integer `x`
    (values must be in [0, num_classes))."""
    x = lift(x)
    if np.dtype(x.dtype).kind not in "iu":
        raise TypeError(f"one_hot: x must be an integer tensor, got {x.dtype}")
    from ..tensor import Tensor
    if is_value(num_classes) and not isinstance(num_classes, Tensor):
        return _one_hot_run_time(x, num_classes)
    num_classes = int(_number(num_classes, "one_hot", "num_classes"))
    if num_classes <= 0:
        raise ValueError(f"one_hot: num_classes must be positive, got {num_classes}")
    return bind("one_hot", x, num_classes=num_classes)


def _one_hot_run_time(x, num_classes):
    """one_hot with the class count computed in the program (`F.one_hot(label,
    logits.shape[1])` with a `None` class dim, a pointer network's
    `one_hot(idx, points.shape[1])`): each row compares `x` with
    `arange(num_classes)`; a value out of range fails at run time as eagerly."""
    from .creation import arange
    from .elementwise import cast
    from .manipulation import unsqueeze
    if len(num_classes.shape) != 0 or np.dtype(num_classes.dtype).kind not in "iu":
        raise TypeError(f"one_hot: num_classes must be an int or a 0-d integer tensor, got a "
                        f"{np.dtype(num_classes.dtype).name} tensor of shape "
                        f"{list(num_classes.shape)}")
    bind("assert", (num_classes > 0) & ((x >= 0) & (x < num_classes)),
         message="one_hot: num_classes must be positive and values in [0, num_classes)")
    classes = arange(num_classes, dtype=x.dtype)
    return cast(unsqueeze(x, -1) == classes, "float32")


@functools.lru_cache(maxsize=64)
def _identity(n):
    eye = np.eye(n, dtype=np.float32)
    eye.flags.writeable = False  # shared by every call (`take` copies its rows)
    return eye


def _one_hot_kernel(x, num_classes):
    # `take` raises past the end; a negative value would wrap, so it is looked for
    try:
        if x.dtype.kind == "i" and x.size and x.min() < 0:
            raise IndexError
        return _identity(num_classes).take(x, axis=0)
    except IndexError:
        raise IndexError(f"one_hot: values must be in [0, {num_classes}), got "
                         f"[{x.min()}, {x.max()}]") from None


register_op("one_hot", _one_hot_kernel,
            lambda x, num_classes: Aval(tuple(x.shape) + (num_classes,), np.dtype(np.float32)),
            fresh=True, checks=True)
