"""Which names of a program may hold "no value" at run time, and their labels.

The numpy backend represents such a value as an `UndefinedValue` object:
an op reading it raises NameError. (Gradient ops never read one: backward
gives a cotangent no path defined a real zero, `control_ops.undefined.
zero_cotangent`.) XLA values always exist, so the lowering gives these
names (and only these) a traced "undefined" flag; this analysis finds them,
with the user's variable name for the error message. Sources: the
`undefined` op (a name a loop assigns first), a `cond` output one branch
leaves unset; they spread through branch outputs and loop carries. Each
control-flow op's home says how (`ControlOpDef.undefined_outputs`).
"""
from __future__ import annotations

from .control_ops import control_op


def maybe_undefined(blocks):
    """{name: label} for every name that may be undefined. `blocks` maps a
    block index to the ops to lower (block 0 and every sub-block)."""
    labels = {}
    changed = True
    while changed:  # loops feed their outputs back in: iterate to a fixpoint
        changed = False
        for ops in blocks.values():
            for op in ops:
                for name, label in _sources(op, labels):
                    if name not in labels:
                        labels[name] = label
                        changed = True
    return labels


def _sources(op, labels):
    """(name, label) of the names `op` may leave undefined: a control-flow op
    says which (its home's `undefined_outputs`)."""
    decl = control_op(op.type)
    if decl is not None:
        yield from decl.undefined_outputs(op, labels)
