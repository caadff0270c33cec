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


def run(view):
    view = view.copy()
    captured = view.program.captured
    consts = view.consts
    ops_by_type = OPS
    # Every op of a compiled program passes here: plain loops, no generator
    # per op; most ops read a value that is not constant and are kept at once.
    with np.errstate(all="ignore"):  # once, not per folded op
        for idx in sorted(view.blocks):
            kept = []
            for op in view.blocks[idx]:
                opdef = ops_by_type.get(op.type)  # control-flow ops are never folded
                if opdef is None or opdef.stateful or opdef.num_outputs == 0:
                    kept.append(op)
                    continue
                args = []
                for v in op.inputs:
                    value = consts.get(v.name)
                    if value is None:
                        break
                    args.append(value)
                else:
                    if _fold(op, opdef, args, consts, captured):
                        continue
                kept.append(op)
            view.blocks[idx] = kept
    return view


def _fold(op, opdef, args, consts, captured):
    """Run `op` on the constants `args`; True when its results became constants."""
    for v in op.outputs:
        if v.name in captured:
            return False
    try:
        result = opdef.kernel(*args, **op.attrs)
    except Exception:
        return False  # let it fail at run time, where errors are located
    if opdef.num_outputs == 1:
        results = [result if type(result) is np.ndarray else np.asarray(result)]
    else:
        results = [np.asarray(r) for r in result]
    nbytes = 0
    for r in results:
        nbytes += r.nbytes
    if nbytes > _MAX_FOLDED_BYTES:
        return False
    for v, r in zip(op.outputs, results):
        consts[v.name] = r
    return True
