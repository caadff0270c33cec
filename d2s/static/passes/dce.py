"""Dead-code elimination: drop ops whose results nothing needs.

Kept: ops producing program outputs, ops with side effects (print, assert,
raise, random draws, writes into captured parameters, reads of a value that
may be undefined: their NameError) and everything they read; a control-flow op is kept whole if it is needed or any of its blocks
has a side effect.
"""
from __future__ import annotations

from ...core.registry import OPS
from ..control_ops import always_kept, saved_var
from .view import ProgramView


def has_side_effect(op, program):
    if always_kept(op):  # declared by its home (`raise`, gradient ops)
        return True
    opdef = OPS.get(op.type)
    if opdef is not None and (opdef.stateful or opdef.num_outputs == 0):
        return True
    if any(v.name in program.captured for v in op.outputs):
        return True  # an in-place update of a parameter (optimizer ops)
    if opdef is not None and not op.is_grad and any(v.may_be_undefined for v in op.inputs):
        # Reading a name no path may have assigned (after a loop that ran
        # zero times) raises NameError, as Python does, used result or not.
        # Control-flow ops only pass such values on; gradient ops read them
        # as zero cotangents.
        return True
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
            needed = (any(v.name in live for v in op.outputs) or has_side_effect(op, program)
                      or saved_var(op) in live)  # a backward reads what it saves
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


def prune_program(program, outputs):
    """Remove from `program` itself the ops (and the Variables only they
    named) that neither `outputs` nor a side effect needs.

    The passes above only choose what the compiler emits; this one edits the
    IR, for a traced program whose outputs are final. Conversion leaves dead
    ops behind (a `while` test first evaluated in Python to choose between a
    Python loop and a `while` op; a value computed and never used), and the
    program users print and save should show only what runs.
    """
    view = run(ProgramView(program, program.global_block().ops, outputs))
    for block in program.blocks:
        block.ops[:] = view.blocks.get(block.idx, ())
    named = _names_referenced(program)
    for block in program.blocks:
        for name in [n for n, v in block.vars.items()
                     if n not in named and not v.is_data and n not in program.captured]:
            del block.vars[name]


def _names_referenced(program):
    """Every name an op reads, writes or mentions in an attribute (branch and
    body results, loop placeholders, saved scopes): what must stay declared."""
    names = set()

    def mention(value):
        if isinstance(value, str):
            names.add(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                mention(item)

    for op in program.all_ops():
        names.update(v.name for v in op.inputs)
        names.update(v.name for v in op.outputs)
        for value in op.attrs.values():
            mention(value)
    return names
