"""Flatten nested tuples/lists/dicts of values into leaves and back.

A tree definition is None for a leaf, `(type, children)` for a tuple or
list, `(type, keys, children)` for a dict (`dict`, or the dict subclass
that converted code returns: `rebuild_dict`). Every branch and loop of a trace
flattens its values a few times: the walks are plain loops (no generator
per container).
"""
from __future__ import annotations

from collections import defaultdict


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
        kind = dict if type(x) is dict or isinstance(x, defaultdict) else type(x)
        return (kind, keys, tuple([_flatten(dict.__getitem__(x, k), leaves) for k in keys]))
    leaves.append(x)
    return None


def unflatten(treedef, leaves):
    return _build(treedef, iter(leaves))


def _build(d, it):
    if d is None:
        return next(it)
    if len(d) == 3:
        items = {k: _build(s, it) for k, s in zip(d[1], d[2])}
        return items if d[0] is dict else rebuild_dict(d[0], items)
    return rebuild(d[0], [_build(s, it) for s in d[1]])


def dict_like(like, items):
    """`items` (a plain dict) as a dict of `like`'s type (see rebuild_dict)."""
    if type(like) is dict or isinstance(like, defaultdict):
        return items
    return rebuild_dict(type(like), items)


def rebuild_dict(kind, items):
    """A dict of type `kind` holding `items` (a plain dict): an OrderedDict,
    or a model-output class (PaddleNLP's and Hugging Face's `ModelOutput`: a
    dataclass that is a dict of its fields that are set) comes back as the
    same type, built from its keys. A type that does not build back to the
    same keys and values is given as a plain dict, as before. (A
    defaultdict is a plain dict here: its factory is not part of the tree.)"""
    try:
        if all(isinstance(k, str) for k in items):
            new = kind(**items)
        else:
            new = kind(items)
    except (TypeError, ValueError):
        return items
    if list(dict.keys(new)) != list(items) or any(
            dict.__getitem__(new, k) is not v for k, v in items.items()):
        return items
    return new


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
