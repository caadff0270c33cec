"""Trace the lazy right side of a static `and`/`or` inline when it is pure and cheap.

A static `a and b` is `cond(a, b, a)`: the right side runs only on the path
where Python would evaluate it. That keeps Python's short-circuit meaning,
but a loop test like `while norm > eps and i < n` then pays a conditional
on every trip (XLA's `case`, numpy's `if`) for one comparison. When the
right side can neither fail nor have an effect at run time and costs a few
scalar operations, evaluating it on both paths gives the same value, and
`a & b` is one select-free elementwise op that fuses with the loop test.

The decision is made on the traced ops, not on the source: the right side
is traced into the current block; if every op it added is a registered,
non-stateful, non-drawing op that cannot raise on its values
(`OpDef.may_fail`), has no sub-block, is elementwise (or a constant, a cast,
a reshape) and holds at most `MAX_ELEMENTS` elements, it stays there.
Otherwise everything it added is rolled back and the caller builds the
`cond` as before, tracing the right side again inside its branch (the
converter asks for this only when the right side's source has no calls, so
tracing it twice repeats no user code with effects: see
`convert.transformers.logical_expressions`).
"""
from __future__ import annotations

import itertools

from ..core.registry import OPS
from .control_flow import _transaction
from .control_ops import sub_block_ids

__all__ = ["trace_inline", "NOT_INLINED", "MAX_ELEMENTS"]

# Results larger than this are not "cheap": the `cond` skips their work when the
# left side decides the value (a scalar loop test holds one element).
MAX_ELEMENTS = 64

# Ops that are neither elementwise nor costly: a constant, a dtype change, a
# one-element right side reshaped to the left side's shape.
_SHAPE_OR_CONSTANT = frozenset({"full", "cast", "reshape", "assign"})

NOT_INLINED = object()


class _Rejected(Exception):
    """Internal: the right side's ops are not all pure and cheap (rolled back)."""


def trace_inline(program, fn):
    """`fn()` traced into `program`'s current block when every op it adds is
    pure and cheap (see the module docstring); else `NOT_INLINED`, with
    nothing it added left behind. An error `fn` raises rolls back too and
    gives `NOT_INLINED`: the caller's general path traces it again and
    raises (or handles) it as it always did."""
    block = program.current_block()
    n_ops, n_blocks = len(block.ops), len(program.blocks)
    # (the names a rejected trial used are given out again: the program built
    # then is the one built without the trial, names included)
    first_name = next(program._names)
    program._names = itertools.count(first_name)
    try:
        with _transaction(program, block):
            value = fn()
            if len(program.blocks) != n_blocks or not all(
                    _pure_and_cheap(op) for op in block.ops[n_ops:]):
                raise _Rejected()
    except Exception:  # (_Rejected, or the operand's own error: see above)
        program._names = itertools.count(first_name)
        return NOT_INLINED
    return value


def _pure_and_cheap(op):
    opdef = OPS.get(op.type)
    if opdef is None or opdef.stateful or opdef.draws or sub_block_ids(op):
        return False
    if not (opdef.elementwise or op.type in _SHAPE_OR_CONSTANT) or opdef.may_fail(op):
        return False
    for v in op.outputs:
        size = 1
        for d in v.shape:
            if type(d) is not int or d < 0:
                return False
            size *= d
        if size > MAX_ELEMENTS:
            return False
    return True
