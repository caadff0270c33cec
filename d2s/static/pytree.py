"""Flatten nested tuples/lists/dicts of values into leaves and back.

A tree definition is None for a leaf, `(type, children)` for a tuple or
list, `(dict, keys, children)` for a dict. Every branch and loop of a trace
flattens its values a few times: the walks are plain loops (no generator
per container).
"""
from __future__ import annotations


def flatten(tree):
    leaves = []
    return leaves, _flatten(tree, leaves)


# Module-level recursions, not closures: a closure that calls itself is a
# reference cycle, left (with the leaves it holds) for the cyclic collector.
def _flatten(x, leaves):
    if isinstance(x, (tuple, list)):
        return (type(x), tuple([_flatten(v, leaves) for v in x]))
    if isinstance(x, dict):
        keys = tuple(x)
        return (dict, keys, tuple([_flatten(x[k], leaves) for k in keys]))
    leaves.append(x)
    return None


def unflatten(treedef, leaves):
    return _build(treedef, iter(leaves))


def _build(d, it):
    if d is None:
        return next(it)
    if d[0] is dict:
        return {k: _build(s, it) for k, s in zip(d[1], d[2])}
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
