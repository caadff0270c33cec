"""Common-subexpression elimination: one op per (type, inputs, attributes).

A later duplicate is dropped and its uses read the first result. Values of
a block are available to its sub-blocks (they run after the value is made),
not the other way round. Stateful ops and control flow are never merged.
"""
from __future__ import annotations

from ...core.registry import OPS
from .view import apply_renames, renamed_op as _renamed


def _key(op, rename):
    opdef = OPS.get(op.type)  # control-flow ops are not core ops: never merged
    if opdef is None or opdef.stateful or opdef.num_outputs == 0:
        return None
    attrs = op.attrs
    if attrs:
        try:
            attrs = tuple(sorted(attrs.items()))
            hash(attrs)
        except TypeError:  # unhashable attributes (arrays): never merged
            return None
    else:
        attrs = ()
    names = []
    for v in op.inputs:
        names.append(rename.get(v.name, v).name)
    return (op.type, tuple(names), attrs)


def run(view):
    view = view.copy()
    rename = {}  # dropped output name -> surviving Variable
    _visit(view, 0, rename, {}, [])
    # once more: an op's own result names (while body outputs) may have been
    # redirected while its sub-blocks were visited
    apply_renames(view, rename)
    return view


def _visit(view, idx, rename, available, added):
    """`available`: key -> outputs of the ops visible here; keys this block
    adds go to `added`, so the caller can take them back out (a sub-block's
    values are not visible after it; undoing beats copying the table for
    every sub-block, which is quadratic in the program's size)."""
    kept = []
    for op in view.blocks[idx]:
        op = _renamed(op, rename)
        key = _key(op, rename)
        if key is not None and key in available:
            for dup, first in zip(op.outputs, available[key]):
                rename[dup.name] = first
            continue
        if key is not None:
            available[key] = op.outputs
            added.append(key)
        kept.append(op)
        for sub in view.sub_block_ids(op):
            inner = []
            _visit(view, sub, rename, available, inner)
            for k in inner:
                del available[k]
    view.blocks[idx] = kept
