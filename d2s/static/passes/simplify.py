"""Algebraic identities: `x * 1`, `1 * x`, `x + 0`, `0 + x`, `x - 0`, `x / 1` are `x`.

Only where the identity is exact: the constant is all ones / zeros, and the
result has x's dtype and shape (no promotion, no broadcasting). Typical
source: the loop counter `start + i * step` of a `for` over `range`.
"""
from __future__ import annotations

import numpy as np

from .view import apply_renames

_IDENTITY = {
    "multiply": (1, (0, 1)),   # (neutral value, operand positions it may take)
    "add": (0, (0, 1)),
    "subtract": (0, (1,)),
    "divide": (1, (1,)),
}


def _all_equal(value, neutral):
    # one element (the usual constant): its Python number, no array comparison
    return value.item() == neutral if value.ndim == 0 else bool(np.all(value == neutral))


def _passthrough(op, consts):
    rule = _IDENTITY.get(op.type)
    if rule is None or len(op.inputs) != 2:
        return None
    neutral, positions = rule
    out = op.outputs[0]
    for pos in positions:
        const, other = op.inputs[pos], op.inputs[1 - pos]
        value = consts.get(const.name)
        if value is None:
            continue
        if other.dtype == out.dtype and tuple(other.shape) == tuple(out.shape) \
                and None not in out.shape and _all_equal(value, neutral):
            return other
    return None


def run(view):
    view = view.copy()
    rename = {}
    for idx in sorted(view.blocks):
        kept = []
        for op in view.blocks[idx]:
            keep = _passthrough(op, view.consts)
            if keep is not None:
                rename[op.outputs[0].name] = rename.get(keep.name, keep)
                continue
            kept.append(op)
        view.blocks[idx] = kept
    apply_renames(view, rename)
    return view
