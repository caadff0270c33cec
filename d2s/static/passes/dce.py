"""Dead-code elimination: drop ops whose results nothing needs.

Kept: ops producing program outputs, ops with side effects (print, assert,
raise, random draws, writes into captured parameters) and everything they
read; a control-flow op is kept whole if it is needed or any of its blocks
has a side effect.
"""
from __future__ import annotations

from ...core.registry import OPS

_SIDE_EFFECT_TYPES = {"raise", "cond_grad", "while_grad"}


def has_side_effect(op, program):
    if op.type in _SIDE_EFFECT_TYPES:
        return True
    opdef = OPS.get(op.type)
    if opdef is not None and (opdef.stateful or opdef.num_outputs == 0):
        return True
    if any(v.name in program.captured for v in op.outputs):
        return True  # an in-place update of a parameter (optimizer ops)
    return any(has_side_effect(sub_op, program)
               for sub in op.sub_blocks() for sub_op in sub.ops)


def run(view):
    view = view.copy()
    live = set(view.outputs)
    program = view.program

    def sweep(idx):
        kept = []
        for op in reversed(view.blocks[idx]):
            saved = view.saved_names(op)
            scope = op.attrs.get("save_scope") or op.attrs.get("save_steps")
            needed = (any(v.name in live for v in op.outputs) or has_side_effect(op, program)
                      or scope in live)  # a backward reads what it saves
            if not needed:
                continue
            kept.append(op)
            live.update(v.name for v in op.inputs)
            if op.sub_blocks():
                live.update(view.block_results(op))
                live.update(view.rename.get(n, n) for n in saved)
                for sub in reversed(view.sub_block_ids(op)):
                    sweep(sub)
        view.blocks[idx] = kept[::-1]

    sweep(0)
    return view
