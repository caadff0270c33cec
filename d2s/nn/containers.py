"""`ParameterList` (Paddle's container of parameters; the layer containers live
with `Layer`)."""
from __future__ import annotations

from ..core.tensor import Tensor
from .layer import Layer

__all__ = ["ParameterList"]


class ParameterList(Layer):
    """Parameters by position (`0`, `1`, ...), registered on the layer."""

    def __init__(self, parameters=None):
        super().__init__()
        for p in parameters or ():
            self.append(p)

    def __getitem__(self, idx):
        return list(self._parameters.values())[idx]

    def __setitem__(self, idx, param):
        self.add_parameter(str(idx), param)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(list(self._parameters.values()))

    def append(self, param):
        if not isinstance(param, Tensor):
            raise TypeError(f"ParameterList: expects Tensors, got {type(param).__name__}")
        self.add_parameter(str(len(self._parameters)), param)
        return self
