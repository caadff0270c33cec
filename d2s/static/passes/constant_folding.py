"""Constant folding: evaluate at compile time what depends on constants only.

`full` and `assign_value` are constants; any deterministic op whose inputs
are all constants is run once here (with its registry kernel) and becomes a
constant too. Parameters are never constants: they are read by reference
on every run. Folded ops disappear; their values live in `view.consts`.
"""
from __future__ import annotations

import numpy as np

from ...core.registry import OPS

_MAX_FOLDED_BYTES = 1 << 24


def _foldable(op):
    opdef = OPS.get(op.type)  # control-flow ops are not core ops: never folded
    return opdef is not None and not opdef.stateful and opdef.num_outputs > 0


def run(view):
    view = view.copy()
    captured = view.program.captured
    consts = view.consts
    with np.errstate(all="ignore"):  # once, not per folded op
        for idx in sorted(view.blocks):
            kept = []
            for op in view.blocks[idx]:
                if _foldable(op) and all(v.name in consts for v in op.inputs) \
                        and not any(v.name in captured for v in op.outputs):
                    args = [consts[v.name] for v in op.inputs]
                    try:
                        result = OPS[op.type].kernel(*args, **op.attrs)
                    except Exception:
                        kept.append(op)  # let it fail at run time, where errors are located
                        continue
                    results = (result,) if OPS[op.type].num_outputs == 1 else result
                    results = [np.asarray(r) for r in results]
                    if sum(r.nbytes for r in results) <= _MAX_FOLDED_BYTES:
                        for v, r in zip(op.outputs, results):
                            consts[v.name] = r
                        continue
                kept.append(op)
            view.blocks[idx] = kept
    return view
