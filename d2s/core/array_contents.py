"""The contents of the numpy arrays a trace read: conditions of its program.

A trace bakes what it reads into the program, and a numpy array read from
state that outlives the call (a module global, a Layer's attribute, an item
of a dict it holds) is read for its contents: `x * MASK` multiplies by the
numbers MASK held then. Unlike a Tensor, an array has no version counter, so
a write into it (`MASK[0] = 0`, `self.anchors *= 2`) is seen only by looking
at its bytes. Each call therefore compares the array with a copy of what the
trace read (its shape, dtype and bytes), as TorchDynamo guards a global
numpy array it has specialised on, and a difference traces again for the
contents now (jit.read_guards, jit.global_watch).

Comparing costs a pass over the array on every call, so it is done for
arrays up to `CHECKED_BYTES`; a larger array read this way is guarded by
identity only, and the trace says so once, naming it, with what to write
instead (a Tensor, which is an input of the program, or an argument).
"""
from __future__ import annotations

import warnings

import numpy as np

__all__ = ["CHECKED_BYTES", "checked", "snapshot", "same", "frozen", "warn_unchecked"]

CHECKED_BYTES = 64 * 1024
_WARNED = set()
_WARNED_LIMIT = 1024


def checked(array):
    """Whether `array`'s contents are compared on every call."""
    return array.nbytes <= CHECKED_BYTES


def snapshot(array):
    """What `same` compares with: (shape, dtype, bytes), a copy."""
    return array.shape, array.dtype, array.tobytes()


def same(array, snap):
    """Whether `array` holds what `snap` recorded."""
    shape, dtype, data = snap
    return (type(array) is np.ndarray and array.shape == shape and array.dtype == dtype
            and array.tobytes() == data)


def frozen(snap):
    """The array `snap` recorded, read-only (a key of the programs kept)."""
    shape, dtype, data = snap
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def warn_unchecked(label, array):
    """Say once per `label` that a large array's in-place changes are not seen."""
    if label in _WARNED:
        return
    if len(_WARNED) >= _WARNED_LIMIT:
        _WARNED.clear()
    _WARNED.add(label)
    warnings.warn(
        f"d2s: the numpy array {label} ({array.nbytes / 1024:.0f} KiB) is read by converted "
        f"code, so its contents are frozen into the program; checking them on every call "
        f"would copy it each time, so a change made to it in place (`a[i] = v`, `a *= s`) "
        f"is not seen (rebinding it is). Hold it as a Tensor (`d2s.to_tensor(...)`, a "
        f"Layer buffer: an input of the program, read on every call) or pass it as an "
        f"argument.", RuntimeWarning, stacklevel=2)
