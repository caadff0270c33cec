"""The structure of a program's results, as a lowered-cache entry stores it.

A stored module returns flat results; the program's function returns a
tuple of them and, when it keeps residuals for a backward, a dict of
structured values (an undefined flag beside a value, tensor arrays, loop
histories). `describe` writes that structure (a JAX PyTreeDef) as JSON,
`example` reads it back as a value of the same structure, from which the
cache's jitted call rebuilds its results (`jax.tree_util`'s unflatten).
Only the containers d2s's lowering returns are described; any other node
makes the program's results not storable (`describe` returns None).
"""
from __future__ import annotations

from .values import History, TensorArray

__all__ = ["describe", "example"]

_KINDS = {tuple: "tuple", list: "list", dict: "dict", TensorArray: "tensor_array",
          History: "history"}


class _Unknown(Exception):
    """A node of a kind `describe` does not know."""


def describe(treedef):
    """`treedef` as JSON-able lists, or None when it has an unknown node."""
    try:
        return _describe(treedef)
    except _Unknown:
        return None


def _describe(treedef):
    data = treedef.node_data()
    if data is None:  # a leaf
        return "*"
    kind, aux = data
    if kind is type(None):
        return None
    name = _KINDS.get(kind)
    if name is None or (name == "dict" and not all(isinstance(k, str) for k in aux)) or (
            name == "tensor_array" and not _array_aux(aux)):
        raise _Unknown
    children = [_describe(child) for child in treedef.children()]
    if name == "tensor_array" and isinstance(aux, tuple):
        aux = list(aux)  # (rows it started with, axis): JSON's list
    return [name, aux if name in ("dict", "tensor_array") else None, children]


def _array_aux(aux):
    """A tensor array's aux: its base rows, or (base rows, axis)."""
    return isinstance(aux, int) or (isinstance(aux, tuple) and len(aux) == 2
                                    and all(isinstance(a, int) for a in aux))


def example(description):
    """A value structured as `description` says (leaves: 0), or None when the
    description does not read as `describe` writes it."""
    try:
        return _example(description)
    except (TypeError, ValueError, KeyError, IndexError):
        return None


def _example(d):
    if d == "*":
        return 0
    if d is None:
        return None
    name, aux, children = d
    values = [_example(c) for c in children]
    if name == "tuple":
        return tuple(values)
    if name == "list":
        return values
    if name == "dict":
        if len(aux) != len(values) or not all(isinstance(k, str) for k in aux):
            raise ValueError(aux)
        return dict(zip(aux, values))
    if name == "tensor_array" and isinstance(aux, list) and len(values) == 2:
        aux = tuple(aux)
    if name == "tensor_array" and _array_aux(aux) and len(values) == 2:
        return TensorArray.tree_unflatten(aux, values)
    if name == "history" and len(values) == 2:
        return History(*values)
    raise ValueError(name)
