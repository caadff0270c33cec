"""Which names of a program may hold "no value" at run time, and their labels.

The numpy backend represents such a value as an `UndefinedValue` object: a
(non-gradient) op reading it raises NameError, a gradient op reads it as a
zero cotangent (a "symbolic zero"). XLA values always exist, so the
lowering gives these names (and only these) a traced "undefined" flag; this
analysis finds them, with the user's variable name for the error message.
Sources: the `undefined` op (a name a loop assigns first), a `cond` output
one branch leaves unset; they spread through branch outputs, loop carries
and gradient ops (a zero cotangent makes zero cotangents).
"""
from __future__ import annotations

ZERO_COTANGENT = "<zero cotangent>"  # the numpy backend's label for it


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
    a = op.attrs
    if op.type == "undefined":
        yield op.outputs[0].name, a["name"]
    elif op.type == "cond":
        names = a.get("labels") or [v.name for v in op.outputs]
        for v, t, f, label in zip(op.outputs, a["true_outs"], a["false_outs"], names):
            for side in (t, f):
                if side is None:
                    yield v.name, label
                elif side in labels:
                    yield v.name, labels[side]
    elif op.type == "while":
        n = a["num_loop_vars"]
        for init, ph, body_out, out in zip(op.inputs[:n], a["loop_vars"], a["body_outs"],
                                           op.outputs):
            for src in (init.name, body_out):
                if src in labels:
                    yield ph, labels[src]
                    yield out.name, labels[src]
    elif op.type == "cond_grad":
        for v, ct in zip(op.inputs, a["ct_vars"]):
            if v.name in labels:
                yield ct, ZERO_COTANGENT
        for v, t, f in zip(op.outputs, a["true_grads"], a["false_grads"]):
            if t in labels or f in labels:
                yield v.name, ZERO_COTANGENT
    elif op.type == "while_grad":
        for v, ct, g, out in zip(op.inputs, a["ct_vars"], a["loop_grads"], op.outputs):
            if v.name in labels or g in labels:
                yield ct, ZERO_COTANGENT
                yield out.name, ZERO_COTANGENT
    elif op.is_grad and any(v.name in labels for v in op.inputs):
        for v in op.outputs:
            yield v.name, ZERO_COTANGENT
