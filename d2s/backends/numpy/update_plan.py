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
  replaces (`out=`, see core.ops.optim_ops), when nothing after it reads them,
  no program output aliases them and its gradient has the parameter's dtype
  (a gradient of another dtype, left by eager code, makes the kernel compute
  its state in that dtype before the final cast: written into the state's
  own array, it would be rounded early); an SGD update whose gradient nothing
  reads afterwards also computes `lr * grad` in the gradient's own array
  (`grad_is_dead=True`), so the update allocates nothing.

Transactional rule: a step that raises must change nothing, and an update
done in place cannot be undone. So the plan writes in place only when no op
after the first in-place update can raise (no `raise` / `assert` op, no
kernel that checks its inputs' values — `OpDef.checks`: cross-entropy
labels, tensor indices, dims read from tensors — nor a branch or loop
holding one) and no result of the run may be undefined (a
name only a loop that may run zero times assigns: reading it after the run
raises NameError, when the updates are done); otherwise it returns None and
the runner computes every new value first and commits after the run.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from ...core.ops.optim_ops import DEAD_GRAD_UPDATES, IN_PLACE_UPDATES
from ...core.registry import OPS
from ...static.control_ops import restored_var, saved_values, saved_var
from ...static.definedness import maybe_undefined
from ...static.passes.dce import has_side_effect
from .inplace import _fresh, _reads

_RAISING = ("raise", "assert")


class UpdateBuffers(NamedTuple):
    """How an update op runs in place (`view.inplace[id(op)]`): per output, the
    name of the array it writes into (None: a new array); `dead_grad`: its
    gradient may be overwritten (DEAD_GRAD_UPDATES)."""
    out: tuple
    dead_grad: bool = False

    def kwargs_source(self, ident):
        out = ", ".join("None" if b is None else ident(b) for b in self.out)
        kwargs = [f"out=({out},)"]
        if self.dead_grad:
            kwargs.append("grad_is_dead=True")
        return kwargs


def may_raise(op, program):
    """True when `op` (or an op of its blocks) may raise at run time: a
    `raise` / `assert`, or a kernel that checks its inputs' values (labels,
    indices, dims from tensors: `OpDef.checks`)."""
    if op.type in _RAISING:
        return True
    opdef = OPS.get(op.type)
    if opdef is not None and opdef.may_fail(op):
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
    reads = _ReadMap(view)
    updates = [op for op in ops if op.type in IN_PLACE_UPDATES
               and any(v.name in overwrites for v in op.outputs)]
    if not updates:
        return None
    barriers = {id(op) for op in ops if has_side_effect(op, program) or may_raise(op, program)}
    for op in updates:
        _move_up(ops, op, _aliases(ops, _targets(op, overwrites)), reads, barriers)
    first = None
    for op in updates:
        targets = _targets(op, overwrites)
        if op.inputs[1].dtype != op.inputs[0].dtype \
                or not _unread_after(view, op, _aliases(ops, targets), reads):
            continue
        out = tuple(overwrites.get(v.name) if overwrites.get(v.name) in targets else None
                    for v in op.outputs)
        view.inplace[id(op)] = UpdateBuffers(out, _grad_is_dead(view, op, reads))
        position = ops.index(op)
        first = position if first is None else min(first, position)
    if first is None or any(may_raise(op, program) for op in ops[first:]):
        return None
    undefined = maybe_undefined(view.blocks)
    if any(name in undefined for name in view.outputs):
        return None  # reading it raises after the run (see the module docstring)
    return view


class _ReadMap:
    """What each op reads at run time: its inputs, its blocks' reads, and for a
    `cond_grad` / `while_grad` the forward values its forward op saved for it
    (held in a scope tuple, so no op input names them)."""

    def __init__(self, view):
        self.view = view
        self.memo = {}  # id(op) -> names (ops are not changed while a plan is made)
        self.saved = {}
        for ops in view.blocks.values():
            for op in ops:
                if saved_var(op):
                    self.saved[saved_var(op)] = set(saved_values(op))

    def __call__(self, op):
        names = self.memo.get(id(op))
        if names is None:
            names = set(_reads(self.view, op))
            restored = restored_var(op)
            if restored in self.saved:
                names |= self.saved[restored]
            self.memo[id(op)] = names
        return names


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


def _move_up(ops, update, alias, reads, barriers):
    """Move `update` to right after the last op it must follow (`barriers`: ids
    of the side-effecting and checking ops, which keep their order with it)."""
    i = ops.index(update)
    inputs = {v.name for v in update.inputs}
    j = i - 1
    while j >= 0:
        op = ops[j]
        if (id(op) in barriers or any(v.name in inputs for v in op.outputs)
                or not alias.isdisjoint(reads(op))):
            break
        j -= 1
    if j + 1 < i:
        ops.pop(i)
        ops.insert(j + 1, update)


def _unread_after(view, update, alias, reads):
    """Nothing after `update` reads the values `alias`, and no program output
    is one of them."""
    if any(n in alias for n in view.outputs):
        return False
    ops = view.blocks[0]
    return all(alias.isdisjoint(reads(op)) for op in ops[ops.index(update) + 1:])


def _grad_is_dead(view, update, reads):
    """The update may overwrite its gradient: an array this run made (a fresh
    op's result), of the parameter's dtype, that nothing reads afterwards."""
    if update.type not in DEAD_GRAD_UPDATES:
        return False
    param, grad = update.inputs[0], update.inputs[1]
    if grad.dtype != param.dtype or grad.name in view.inputs or grad.name in view.consts:
        return False
    producer = next((op for op in view.blocks[0] if any(v.name == grad.name
                                                        for v in op.outputs)), None)
    if producer is None or not _fresh(producer) or producer.type in IN_PLACE_UPDATES:
        return False
    return _unread_after(view, update, _aliases(view.blocks[0], {grad.name}), reads)
