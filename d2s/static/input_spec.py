"""`InputSpec`: the declared shape/dtype of a program input."""
from __future__ import annotations

from ..core.dtypes import as_dtype


class InputSpec:
    """Shape (None = any size on that axis), dtype and optional name of an input."""

    def __init__(self, shape, dtype="float32", name=None, stop_gradient=True):
        self.shape = tuple(None if d is None or d == -1 else int(d) for d in shape)
        self.dtype = as_dtype(dtype)
        self.name = name
        self.stop_gradient = stop_gradient

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    def _key(self):
        return (self.shape, self.dtype.str, self.name)

    def __eq__(self, other):
        return isinstance(other, InputSpec) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"InputSpec(shape={list(self.shape)}, dtype={self.dtype.name}, name={self.name!r})"
