"""Common-subexpression elimination: one op per (type, inputs, attributes).

A later duplicate is dropped and its uses read the first result. Values of
a block are available to its sub-blocks (they run after the value is made),
not the other way round. Stateful ops and control flow are never merged.
"""
from __future__ import annotations

from ...core.registry import OPS
from ..ir import Operator


def _key(op, rename):
    opdef = OPS.get(op.type)
    if opdef is None or opdef.stateful or opdef.num_outputs == 0 or op.sub_blocks():
        return None
    try:
        attrs = tuple(sorted(op.attrs.items()))
        hash(attrs)
    except TypeError:  # unhashable attributes (arrays): never merged
        return None
    return (op.type, tuple(rename.get(v.name, v).name for v in op.inputs), attrs)


def _renamed(op, rename):
    """`op` with inputs and result-name attributes redirected (a new Operator)."""
    if not any(v.name in rename for v in op.inputs) and not _attr_hits(op, rename):
        return op
    attrs = dict(op.attrs)
    for key in ("true_outs", "false_outs", "body_outs"):
        if key in attrs:
            attrs[key] = [rename[n].name if n in rename else n for n in attrs[key]]
    if attrs.get("cond_out") in rename:
        attrs["cond_out"] = rename[attrs["cond_out"]].name
    return Operator(op.block, op.type, [rename.get(v.name, v) for v in op.inputs],
                    op.outputs, attrs, op.origin, op.is_grad)


def _attr_hits(op, rename):
    names = [n for k in ("true_outs", "false_outs", "body_outs") for n in op.attrs.get(k, ())]
    names.append(op.attrs.get("cond_out"))
    return any(n in rename for n in names if n is not None)


def run(view):
    view = view.copy()
    rename = {}  # dropped output name -> surviving Variable

    def visit(idx, available):
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
            kept.append(op)
            for sub in view.sub_block_ids(op):
                visit(sub, dict(available))
        view.blocks[idx] = kept

    visit(0, {})
    view.outputs = [rename[n].name if n in rename else n for n in view.outputs]
    view.rename = {**getattr(view, "rename", {}), **{k: v.name for k, v in rename.items()}}
    return view
