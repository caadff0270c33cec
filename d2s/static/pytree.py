"""Flatten nested tuples/lists/dicts of values into leaves and back.

A tree definition is None for a leaf, `(type, children)` for a tuple or
list, `(dict, keys, children)` for a dict. Every branch and loop of a trace
flattens its values a few times: the walks are plain loops (no generator
per container).
"""
from __future__ import annotations


def flatten(tree):
    leaves = []

    def walk(x):
        if isinstance(x, (tuple, list)):
            return (type(x), tuple([walk(v) for v in x]))
        if isinstance(x, dict):
            keys = tuple(x)
            return (dict, keys, tuple([walk(x[k]) for k in keys]))
        leaves.append(x)
        return None

    return leaves, walk(tree)


def unflatten(treedef, leaves):
    it = iter(leaves)

    def build(d):
        if d is None:
            return next(it)
        if d[0] is dict:
            return {k: build(s) for k, s in zip(d[1], d[2])}
        return d[0]([build(s) for s in d[1]])

    return build(treedef)
