"""Paddle's tensor-array functions (`paddle.tensor.create_array`,
`array_write`, `array_read`, `array_length`) for eager code and code that
`to_static` unrolls: a tensor array is a Python list of Tensors, as in
Paddle's dynamic mode.

In a loop on a tensor, converted code turns `list.append(x)` into a tensor
array of the program; an `array_write` at an index only known when the
program runs has no such form yet, so it is refused with that advice
rather than guessed. An index that is a program value computed from
constants only (`zero + j`, PaddlePaddle's seq2seq code) is known while
the program is built and used as such.
"""
from __future__ import annotations

import numpy as np

from .core.dispatch import Symbolic
from .core.dtypes import as_dtype
from .core.tensor import Tensor

__all__ = ["create_array", "array_write", "array_read", "array_length"]


def create_array(dtype, initialized_list=None):
    """A new tensor array (a list) of `dtype`, holding `initialized_list`'s Tensors."""
    dtype = as_dtype(dtype)
    items = list(initialized_list or [])
    for k, t in enumerate(items):
        if not isinstance(t, (Tensor, Symbolic)):
            raise TypeError(f"create_array: initialized_list[{k}] is a {type(t).__name__}, "
                            "expected a Tensor")
        if np.dtype(t.dtype) != dtype:
            raise TypeError(f"create_array: initialized_list[{k}] is {np.dtype(t.dtype).name}, "
                            f"the array holds {dtype.name}")
    return items


def _index(i, where):
    if isinstance(i, Symbolic):
        from .static.build_time_values import build_time_value
        known = build_time_value(i)   # `zero + j`: a program constant
        if known is not None and known.size == 1 and known.dtype.kind in "iu":
            return int(known.reshape(()))
        raise NotImplementedError(
            f"{where}: an index known only when the program runs (a value of a tensor loop) "
            "is not supported; in converted code append instead (`arr.append(x)` becomes a "
            "tensor array of the program) and read with `arr[i]`")
    if isinstance(i, Tensor):
        if i.size != 1:
            raise ValueError(f"{where}: the index must hold one integer, got shape "
                             f"{list(i.shape)}")
        i = i.numpy().reshape(()).item()
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise TypeError(f"{where}: the index must be an integer Tensor or int, got {i!r}")
    return int(i)


def array_write(x, i, array=None):
    """`array[i] = x`; `i` equal to the length appends. Returns the array."""
    if not isinstance(x, (Tensor, Symbolic)):
        raise TypeError(f"array_write: x must be a Tensor, got {type(x).__name__}")
    k = _index(i, "array_write")
    array = [] if array is None else array
    if not isinstance(array, list):
        raise TypeError(f"array_write: array must be a list made by create_array, got "
                        f"{type(array).__name__}")
    if k < 0 or k > len(array):
        raise IndexError(f"array_write: index {k} is outside the array of length {len(array)} "
                         "(an index equal to the length appends)")
    if k == len(array):
        array.append(x)
    else:
        array[k] = x
    return array


def array_read(array, i):
    """`array[i]`."""
    k = _index(i, "array_read")
    if not 0 <= k < len(array):
        raise IndexError(f"array_read: index {k} is outside the array of length {len(array)}")
    return array[k]


def array_length(array):
    """The number of Tensors in the array, as an int64 Tensor of shape [1]."""
    return Tensor._from_array(np.asarray([len(array)], np.int64))
