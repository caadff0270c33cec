"""`InputSpec`: the declared shape/dtype of a program input.

`buckets` asks for shape buckets on a `None` dim (see `d2s.jit.buckets`): a
call's length on that dim is padded up to the next bucket, so one program
(and one XLA executable) serves every length of a bucket instead of one per
length. The spec checks its bucket list here, where the user wrote it."""
from __future__ import annotations

import numpy as np

from ..core.dtypes import as_dtype

# `buckets="pow2"`: powers of two from 1 up to this (a longer length is an error).
POW2_LIMIT = 1 << 30


class InputSpec:
    """Shape (None = any size on that axis), dtype and optional name of an input.

    `buckets`: an increasing list of positive lengths, or "pow2", for the
    `None` dim `bucket_axis` (default: the only `None` dim)."""

    def __init__(self, shape, dtype="float32", name=None, stop_gradient=True,
                 buckets=None, bucket_axis=None):
        self.shape = tuple(None if d is None or d == -1 else int(d) for d in shape)
        self.dtype = as_dtype(dtype)
        self.name = name
        self.stop_gradient = stop_gradient
        self.buckets = None
        self.bucket_axis = None
        if buckets is not None:
            self.buckets = self._checked_buckets(buckets)
            self.bucket_axis = self._checked_axis(bucket_axis)

    # ---- buckets -------------------------------------------------------------------------
    def _checked_buckets(self, buckets):
        if isinstance(buckets, str):
            if buckets != "pow2":
                raise ValueError(f"{self!r}: buckets={buckets!r} is not a policy; give "
                                 "buckets='pow2' or an increasing list of lengths")
            return "pow2"
        try:
            values = list(buckets)
        except TypeError:
            raise ValueError(f"{self!r}: buckets={buckets!r} must be 'pow2' or an increasing "
                             "list of lengths") from None
        if not values or any(isinstance(b, bool) or not isinstance(b, int) or b < 1
                             for b in values):
            raise ValueError(f"{self!r}: buckets={values!r} must be positive ints")
        if any(a >= b for a, b in zip(values, values[1:])):
            raise ValueError(f"{self!r}: buckets={values!r} is not increasing; list the "
                             "bucket lengths from smallest to largest")
        return tuple(values)

    def _checked_axis(self, axis):
        free = [i for i, d in enumerate(self.shape) if d is None]
        if axis is None:
            if len(free) != 1:
                raise ValueError(f"{self!r}: buckets need one None dim to pad, this shape has "
                                 f"{len(free)}; say which with bucket_axis=")
            return free[0]
        axis = int(axis)
        if axis < 0:
            axis += len(self.shape)
        if axis not in free:
            raise ValueError(f"{self!r}: bucket_axis={axis} is not a None dim of its shape")
        return axis

    def bucket_for(self, length):
        """The bucket length that `length` is padded to (an error above the largest)."""
        if self.buckets == "pow2":
            if length > POW2_LIMIT:
                raise ValueError(f"{self!r}: length {length} is above the largest pow2 bucket")
            return 1 if length <= 1 else 1 << (int(length) - 1).bit_length()
        for b in self.buckets:
            if length <= b:
                return b
        raise ValueError(f"{self!r}: length {length} on axis {self.bucket_axis} is above the "
                         f"largest bucket {self.buckets[-1]}; add a larger bucket")

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    @classmethod
    def from_numpy(cls, ndarray, name=None):
        """The spec of a numpy array (Paddle's name): its shape and dtype."""
        ndarray = np.asarray(ndarray)
        return cls(ndarray.shape, ndarray.dtype, name)

    def _key(self):
        return (self.shape, self.dtype.str, self.name, self.buckets, self.bucket_axis)

    def __eq__(self, other):
        return isinstance(other, InputSpec) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        extra = "" if self.buckets is None else f", buckets={self.buckets!r}"
        return (f"InputSpec(shape={list(self.shape)}, dtype={self.dtype.name}, "
                f"name={self.name!r}{extra})")
