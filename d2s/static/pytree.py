"""Flatten nested tuples/lists/dicts of values into leaves and back.

A tree definition is None for a leaf, `(type, children)` for a tuple or
list, `(dict, keys, children)` for a dict, and `(Record(cls), keys,
children)` for a dict subclass (`OrderedDict`, a model-output mapping) or a
dataclass instance (its fields): model code returns those, and the result
must come back as the same type holding the run's values, never as one
opaque leaf whose tensors are the trace's. Every branch and loop of a trace
flattens its values a few times: the walks are plain loops (no generator
per container).
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict


class Record:
    """The kind of a mapping-like node that is not a plain dict: a dict
    subclass or a dataclass, rebuilt as the same type from its items."""
    __slots__ = ("cls", "factory")

    def __init__(self, cls, factory=None):
        self.cls, self.factory = cls, factory

    def __eq__(self, other):
        return (isinstance(other, Record) and self.cls is other.cls
                and self.factory is other.factory)

    def __hash__(self):
        return hash((self.cls, id(self.factory)))

    def __repr__(self):
        return f"Record({self.cls.__name__})"

    def make(self, keys, values):
        cls = self.cls
        if not issubclass(cls, dict):  # a dataclass: its fields set as they were
            obj = cls.__new__(cls)
            for k, v in zip(keys, values):
                object.__setattr__(obj, k, v)  # (a frozen one too)
            return obj
        if issubclass(cls, defaultdict):
            return cls(self.factory, zip(keys, values))
        try:
            return cls(zip(keys, values))
        except (TypeError, ValueError):
            # a mapping whose constructor takes fields (a model-output class)
            return cls(**dict(zip(keys, values)))


def record_fields(x):
    """The field names of a dataclass instance that it holds (flattened in
    this order)."""
    return tuple(f.name for f in dataclasses.fields(x) if hasattr(x, f.name))


def is_record(x):
    """A dataclass instance (not a dataclass type, nor a dict)."""
    return not isinstance(x, dict) and _is_record(x)


def _is_record(x):
    """A dict subclass or a dataclass instance (not a dataclass type)."""
    cls = type(x)
    return (isinstance(x, dict) and cls is not dict) or (
        dataclasses.is_dataclass(cls) and not isinstance(x, type))


def flatten(tree):
    leaves = []
    return leaves, _flatten(tree, leaves)


# Module-level recursions, not closures: a closure that calls itself is a
# reference cycle, left (with the leaves it holds) for the cyclic collector.
def _flatten(x, leaves):
    if isinstance(x, (tuple, list)):
        return (type(x), tuple([_flatten(v, leaves) for v in x]))
    if type(x) is dict:
        keys = tuple(x)
        return (dict, keys, tuple([_flatten(x[k], leaves) for k in keys]))
    if _is_record(x):
        if isinstance(x, dict):
            keys = tuple(x)
            values = [x[k] for k in keys]
        else:
            keys = record_fields(x)
            values = [getattr(x, k) for k in keys]
        kind = Record(type(x), getattr(x, "default_factory", None))
        return (kind, keys, tuple([_flatten(v, leaves) for v in values]))
    leaves.append(x)
    return None


def unflatten(treedef, leaves):
    return _build(treedef, iter(leaves))


def _build(d, it):
    if d is None:
        return next(it)
    if d[0] is dict:
        return {k: _build(s, it) for k, s in zip(d[1], d[2])}
    if type(d[0]) is Record:
        return d[0].make(d[1], [_build(s, it) for s in d[2]])
    return rebuild(d[0], [_build(s, it) for s in d[1]])


def rebuild(kind, items):
    """A tuple or list of type `kind` holding `items`: a namedtuple (or any
    tuple subclass whose constructor takes the items one by one) comes back
    as the same type, as converted code must return what the eager code
    returns."""
    if kind is tuple or kind is list:
        return kind(items)
    if hasattr(kind, "_make"):
        return kind._make(items)  # a namedtuple
    try:
        return kind(items)
    except TypeError:
        return kind(*items)
