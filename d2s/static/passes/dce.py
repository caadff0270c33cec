"""Dead-code elimination: drop ops whose results nothing needs.

Kept: ops producing program outputs, ops with side effects (print, assert,
raise, random draws, writes into captured parameters, reads of a value that
may be undefined: their NameError) and everything they read; a control-flow
op is kept whole if it is needed or any of its blocks has a side effect.
"""
from __future__ import annotations

from ...core.registry import OPS
from ..control_ops import CONTROL_OPS, always_kept, saved_var, sub_block_ids
from .view import ProgramView


def has_side_effect(op, program):
    return SideEffects(program)(op)


class SideEffects:
    """`effects(op)`: does `op` have a side effect? A control-flow op has one
    when an op of its blocks has; each block is asked once per instance (a
    nested op would otherwise be re-scanned by every op enclosing it)."""

    def __init__(self, program):
        self.program = program
        self.captured = program.captured
        self.blocks = {}  # block index -> whether an op in it has a side effect

    def __call__(self, op):
        # Asked of every op twice per trace (pruning, then the compiler's DCE):
        # one registry lookup each, plain loops.
        opdef = OPS.get(op.type)
        if opdef is None:
            if always_kept(op):  # declared by its home (`raise`, gradient ops)
                return True
        elif opdef.stateful or opdef.num_outputs == 0:
            return True
        captured = self.captured
        for v in op.outputs:
            if v.name in captured:
                return True  # an in-place update of a parameter (optimizer ops)
        if opdef is not None:
            if not op.is_grad:
                for v in op.inputs:
                    if v.may_be_undefined:
                        # Reading a name no path may have assigned (after a loop
                        # that ran zero times) raises NameError, as Python does,
                        # used result or not. Control-flow ops only pass such
                        # values on; a gradient op reads one only where its
                        # forward did.
                        return True
            return False  # a core op has no sub-blocks
        for idx in sub_block_ids(op):
            found = self.blocks.get(idx)
            if found is None:
                found = self.blocks[idx] = any(
                    self(sub_op) for sub_op in self.program.blocks[idx].ops)
            if found:
                return True
        return False


def run(view):
    view = view.copy()
    _keep_needed(view)
    return view


def _keep_needed(view):
    """Drop from `view` itself the ops that nothing needs."""
    _sweep(view, 0, set(view.outputs), SideEffects(view.program))


def _sweep(view, idx, live, effects):
    """Keep the ops of block `idx` that are needed, last to first, marking what
    they read live. An op is needed when a result is live, it has a side
    effect (`effects`), or a backward reads what it saves. (Module-level: a
    closure calling itself is a reference cycle, left with the view it holds
    for the cyclic collector.)"""
    # Every op of the program passes here twice per trace (pruning, then the
    # compiler's DCE): plain loops, no call per op for the usual live core op.
    kept = []
    add = live.add
    control_ops = CONTROL_OPS
    for op in reversed(view.blocks[idx]):
        for v in op.outputs:
            if v.name in live:
                break
        else:
            if not (effects(op) or saved_var(op) in live):
                continue
        kept.append(op)
        for v in op.inputs:
            add(v.name)
        if op.type in control_ops:
            subs = sub_block_ids(op)
            if subs:
                live.update(view.block_results(op))
                live.update([view.rename.get(n, n) for n in view.saved_names(op)])
                for sub in reversed(subs):
                    _sweep(view, sub, live, effects)
    view.blocks[idx] = kept[::-1]


def prune_program(program, outputs):
    """Remove from `program` itself the ops (and the Variables only they
    named) that neither `outputs` nor a side effect needs.

    The passes above only choose what the compiler emits; this one edits the
    IR, for a traced program whose outputs are final. Conversion leaves dead
    ops behind (a `while` test first evaluated in Python to choose between a
    Python loop and a `while` op; a value computed and never used), and the
    program users print and save should show only what runs.
    """
    view = ProgramView(program, program.global_block().ops, outputs)
    _keep_needed(view)  # (a view of its own: no copy)
    for block in program.blocks:
        block.ops[:] = view.blocks.get(block.idx, ())
    named = _names_referenced(program)
    for block in program.blocks:
        for name in [n for n, v in block.vars.items()
                     if n not in named and not v.is_data and n not in program.captured]:
            del block.vars[name]
    program._pruned_for = (frozenset(outputs), _op_count(program))


def _op_count(program):
    return sum([len(block.ops) for block in program.blocks])


def finds_nothing(view):
    """Whether DCE of `view`, after the passes before it, is sure to remove
    nothing: `view` is the whole program as `prune_program` left it (no op
    added or removed since), needing at least the outputs it was pruned for.
    Every op left was needed then and still is: folding, simplification and
    CSE drop ops without leaving any other op unread (what a folded op read
    was folded too; a dropped op's readers read its twin or its operand). A
    traced function's program is compiled so: the DCE pass would walk every
    op again to find nothing."""
    program = view.program
    pruned = program._pruned_for
    return (pruned is not None and pruned[0].issubset(view.outputs)
            and view.blocks[0] == program.blocks[0].ops and pruned[1] == _op_count(program))


def _names_referenced(program):
    """Every name an op reads, writes or mentions in an attribute (branch and
    body results, loop placeholders, saved scopes): what must stay declared."""
    names = set()
    add = names.add
    atoms = _ATOMS
    for block in program.blocks:
        for op in block.ops:
            for v in op.inputs:
                add(v.name)
            for v in op.outputs:
                add(v.name)
            for value in op.attrs.values():
                t = type(value)
                if t is str:
                    add(value)
                elif t is tuple or t is list:
                    # (the usual: a shape or axes, numbers; one call per item
                    # only where an item is itself a sequence)
                    for item in value:
                        t = type(item)
                        if t is str:
                            add(item)
                        elif t not in atoms and isinstance(item, (list, tuple, str)):
                            _mention(item, names)
                elif t not in atoms and isinstance(value, (str, list, tuple)):
                    _mention(value, names)
    return names


# Attribute values that name nothing, told by their exact type without a call
# (every op's fill values, flags and axes pass here once per trace).
_ATOMS = frozenset((int, float, bool, type(None)))


def _mention(value, names):
    if isinstance(value, str):
        names.add(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _mention(item, names)
