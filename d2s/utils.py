"""`d2s.utils`: nested-structure helpers (Paddle's `paddle.utils`)."""
from __future__ import annotations

import sys

__all__ = ["map_structure", "flatten", "pack_sequence_as"]


def _pending_items(x):
    """The items of a Python list that converted code carries into a tensor
    loop (`static.tensor_array.PendingArray` while the body is first traced),
    else None: to these helpers it is the list it stands for, as eagerly
    (`caches = map_structure(f, caches)` in a decoding loop). Looked up
    lazily: without the static layer no value can be one."""
    module = sys.modules.get("d2s.static.tensor_array")
    pending = getattr(module, "PendingArray", None)
    return x.items if pending is not None and isinstance(x, pending) else None


def _is_seq(x):
    return isinstance(x, (list, tuple, dict))


def flatten(nest):
    """The leaves of nested lists / tuples / dicts (dicts in sorted key order)."""
    if isinstance(nest, dict):
        return [leaf for k in sorted(nest) for leaf in flatten(nest[k])]
    if isinstance(nest, (list, tuple)):
        return [leaf for item in nest for leaf in flatten(item)]
    items = _pending_items(nest)
    return [nest] if items is None else flatten(items)


def pack_sequence_as(structure, flat_sequence):
    """`flat_sequence` in the shape of `structure` (the inverse of `flatten`)."""
    it = iter(flat_sequence)

    def build(s):
        if isinstance(s, dict):
            return {k: build(s[k]) for k in sorted(s)}
        if isinstance(s, (list, tuple)):
            items = [build(v) for v in s]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        pending = _pending_items(s)
        return next(it) if pending is None else [build(v) for v in pending]
    return build(structure)


def map_structure(func, *structures):
    """`func` applied leaf by leaf to structures of the same shape."""
    if not structures:
        raise TypeError("map_structure: needs at least one structure")
    flats = [flatten(s) for s in structures]
    if any(len(f) != len(flats[0]) for f in flats):
        raise ValueError("map_structure: the structures have different numbers of leaves")
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in zip(*flats)])
