"""Tensor methods for the functions of issue 25's extra op families
(`x.diag()`, `x.kron(y)`, ...): each forwards to the function with the
tensor as its first argument, so eager Tensors and static Variables share
it. Attached here, beside the families, so the shared method table
(`core/methods.py`) needs no edit per name."""
from __future__ import annotations

from ..methods import TensorMethods


def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def attach(namespace, names):
    """Make each function `namespace.<name>` a method of every tensor (a
    method the table already defines is kept)."""
    for name in names:
        if not hasattr(TensorMethods, name):
            setattr(TensorMethods, name, _method(getattr(namespace, name)))
