"""In-place, fused parameter updates for a compiled training step.

A traced step's program computes each new parameter (and optimizer state)
as a new value, and the runner commits it. Hand-written numpy does better:
`w -= lr * dw` right after `dw` is known, in `w`'s own memory. `plan_in_place`
does the same on the op lists the compiler emits (a `ProgramView`; the
Program itself is not changed):

* fused: each update op moves up to right after the last op it has to
  follow: the producers of its inputs, every reader of the value it
  overwrites (views of it included: a `transpose` of a weight shares its
  memory), and every side-effecting op before it (prints, asserts, raises
  keep their order with the updates);
* in place: the update writes its results into the arrays of the values it
  replaces (`out=`, see core.ops.optim_ops), when nothing after it reads them
  and no program output aliases them.

Transactional rule: a step that raises must change nothing, and an update
done in place cannot be undone. So the plan writes in place only when no op
after the first in-place update can raise (no `raise` / `assert` op, nor a
branch or loop holding one); otherwise it returns None and the runner
computes every new value first and commits after the run.
"""
from __future__ import annotations

from ..core.ops.optim_ops import IN_PLACE_UPDATES
from .passes.dce import has_side_effect
from .passes.inplace import _fresh, _reads

_RAISING = ("raise", "assert")


def may_raise(op, program):
    """True when `op` (or an op of its blocks) is a run-time check that can raise."""
    if op.type in _RAISING:
        return True
    return any(may_raise(inner, program) for sub in op.sub_blocks() for inner in sub.ops)


def plan_in_place(view, overwrites):
    """Schedule and mark in-place updates in block 0 of `view` (a copy is made).

    `overwrites`: output name -> the input name whose array that output may
    reuse (a new parameter value -> the parameter). Returns the new view, or
    None when the transactional rule forbids writing in place.
    """
    view = view.copy()
    ops = view.blocks[0]
    program = view.program
    updates = [op for op in ops if op.type in IN_PLACE_UPDATES
               and any(v.name in overwrites for v in op.outputs)]
    if not updates:
        return None
    for op in updates:
        _move_up(view, op, _aliases(ops, _targets(op, overwrites)))
    first = None
    for op in updates:
        targets = _targets(op, overwrites)
        if not _only_reader(view, op, _aliases(ops, targets)):
            continue
        view.inplace[id(op)] = tuple(overwrites.get(v.name) if overwrites.get(v.name) in targets
                                     else None for v in op.outputs)
        position = ops.index(op)
        first = position if first is None else min(first, position)
    if first is None or any(may_raise(op, program) for op in ops[first:]):
        return None
    return view


def _targets(op, overwrites):
    """The inputs of `op` whose arrays its outputs may take over."""
    inputs = {v.name for v in op.inputs}
    return {overwrites[v.name] for v in op.outputs
            if v.name in overwrites and overwrites[v.name] in inputs}


def _aliases(ops, names):
    """`names` and every value that may share memory with them (results of ops
    that may return views of their inputs: anything but fresh elementwise ops,
    matmul and the updates themselves)."""
    alias = set(names)
    for op in ops:
        if op.type in IN_PLACE_UPDATES:
            continue  # its results are the new values (written over the old ones)
        if not _fresh(op) and any(v.name in alias for v in op.inputs):
            alias.update(v.name for v in op.outputs)
    return alias


def _move_up(view, update, alias):
    """Move `update` to right after the last op it must follow."""
    ops, program = view.blocks[0], view.program
    i = ops.index(update)
    inputs = {v.name for v in update.inputs}
    j = i - 1
    while j >= 0:
        op = ops[j]
        if (any(v.name in inputs for v in op.outputs) or has_side_effect(op, program)
                or may_raise(op, program) or not alias.isdisjoint(_reads(view, op))):
            break
        j -= 1
    if j + 1 < i:
        ops.pop(i)
        ops.insert(j + 1, update)


def _only_reader(view, update, alias):
    """Nothing after `update` reads the values it would overwrite, and no
    program output is one of them."""
    if any(n in alias for n in view.outputs):
        return False
    ops = view.blocks[0]
    return all(alias.isdisjoint(_reads(view, op)) for op in ops[ops.index(update) + 1:])
