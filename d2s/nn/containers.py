"""`LayerDict` and `ParameterList` (Paddle's containers; `Sequential` and
`LayerList` live with `Layer`)."""
from __future__ import annotations

from collections import OrderedDict

from ..core.tensor import Tensor
from .layer import Layer

__all__ = ["LayerDict", "ParameterList"]


class LayerDict(Layer):
    """Sublayers by name, in insertion order; registered as attributes are."""

    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key):
        return self._sub_layers[key]

    def __setitem__(self, key, layer):
        self.add_sublayer(key, layer)

    def __delitem__(self, key):
        delattr(self, key)

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers)

    def __contains__(self, key):
        return key in self._sub_layers

    def keys(self):
        return self._sub_layers.keys()

    def values(self):
        return self._sub_layers.values()

    def items(self):
        return self._sub_layers.items()

    def clear(self):
        for key in list(self._sub_layers):
            delattr(self, key)

    def pop(self, key):
        layer = self._sub_layers[key]
        delattr(self, key)
        return layer

    def update(self, sublayers):
        items = sublayers.items() if isinstance(sublayers, (dict, OrderedDict, LayerDict)) \
            else sublayers
        for key, layer in items:
            self.add_sublayer(key, layer)


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
