"""What a parameter's `ParamAttr` says about training (learning-rate scale,
regularizer, clipping), kept beside the parameter: a Tensor has fixed slots,
so the attribute object is found by the Tensor's identity here and dropped
with the Tensor. Layers record it (`d2s.nn.param_attr`); optimizers and
gradient clipping read it. Core, so that both may."""
from __future__ import annotations

import weakref

__all__ = ["remember", "param_attr_of"]

_ATTRS = {}  # id(param) -> (weakref to param, attr)


def remember(param, attr):
    key = id(param)
    _ATTRS[key] = (weakref.ref(param, lambda _r, key=key: _ATTRS.pop(key, None)), attr)


def param_attr_of(param):
    """The ParamAttr `param` was made with, or None."""
    entry = _ATTRS.get(id(param))
    if entry is None or entry[0]() is not param:
        return None
    return entry[1]
