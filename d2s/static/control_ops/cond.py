"""`cond` and `cond_grad`: every rule of a branch, in one place.

`cond(pred, *reads) -> outs` runs `true_block` or `false_block` (each in a
child scope of the op's block) and hands out the names its
`true_outs` / `false_outs` list; None there means that path leaves the
output undefined (an early-return value read only where it was set).
`labels` name the outputs for the NameError of reading such a value.
`reads` are the outer Variables the blocks read, so that passes and
backward see the true data dependencies. Tracing Python branches into a
`cond` (output merging, promotion, the user-facing errors) is the front end
`static.control_flow.cond`; this module is what the op means.

`cond_grad(cts) -> grads` is its gradient: it runs the gradient block of the
branch the forward took, in a child of the scope the forward saved
(`save_scope`, with only the names in `save_scope_keep`), with the output
cotangents bound to `ct_vars`, and hands out `true_grads` / `false_grads`.
"""
from __future__ import annotations

import numpy as np

from ..scope import Scope, UndefinedValue
from .gradients import (ct_placeholder, is_float, keep_for_backward, resolve,
                        saved_var_for)
from ...core.attr_schema import TEXT, optional, sequence_of
from .registry import ControlOpDef, SavedScope, register_control_op, type_mismatch
from .recompute import copy_ops
from .undefined import zero_cotangent

_BRANCHES = ("true", "false")


def append_cond(parent, pred, reads, outs, blocks, results, labels):
    """Append the op to `parent`: `blocks` and `results` are per branch (true,
    false); the op's inputs are the predicate, then `reads`."""
    (true_block, false_block), (true_outs, false_outs) = blocks, results
    return parent.append_op("cond", [pred] + list(reads), outs, {
        "true_block": true_block.idx, "false_block": false_block.idx,
        "true_outs": true_outs, "false_outs": false_outs, "labels": labels})


def _labels(op):
    return op.attrs.get("labels") or [v.name for v in op.outputs]


def _taken(value):
    """The branch a predicate value selects (any one-element array)."""
    return bool(np.asarray(value).reshape(()))


# ---- shape rule --------------------------------------------------------------------
def _check(op):
    a, blocks = op.attrs, op.block.program.blocks
    if not op.inputs or op.inputs[0].dtype != np.bool_:
        return "cond: the predicate must be a bool value"
    for key in _BRANCHES:
        names = a[f"{key}_outs"]
        if len(names) != len(op.outputs):
            return f"cond: {key}_outs has {len(names)} names for {len(op.outputs)} outputs"
        for v, name in zip(op.outputs, names):
            if name is None:
                continue
            src = blocks[a[f"{key}_block"]].lookup(name)
            if src is None:
                return f"cond: {key}_outs names unknown variable {name!r}"
            problem = type_mismatch(f"cond output ({key} branch)", v, src)
            if problem:
                return problem
    return None


# ---- interpretation ----------------------------------------------------------------
def _interpret(op, scope, run_block):
    a = op.attrs
    branch = _taken(scope.get(op.inputs[0].name))
    key = "true" if branch else "false"
    sub = Scope(scope)
    run_block(a[f"{key}_block"], sub)
    for v, name, label in zip(op.outputs, a[f"{key}_outs"], _labels(op)):
        scope.set(v.name, sub.get(name) if name is not None else UndefinedValue(label))
    saved = a.get("save_scope")
    if saved:
        keep = a.get("save_scope_keep")
        if keep is not None:  # only what the gradient blocks read
            sub.vars = {k: sub.vars[k] for k in keep if k in sub.vars}
        scope.set(saved, (branch, sub))


def _interpret_grad(op, scope, run_block):
    a = op.attrs
    branch, fwd = scope.get(a["scope"])
    key = "true" if branch else "false"
    sub = Scope(fwd)
    for name, v in zip(a["ct_vars"], op.inputs):
        sub.vars[name] = scope.get(v.name)
    run_block(a[f"{key}_block"], sub)
    for v, name in zip(op.outputs, a[f"{key}_grads"]):
        scope.set(v.name, sub.get(name))


# ---- vjp: a gradient block per branch, one cond_grad --------------------------------
def _vjp(op, out_cts, req, differentiate):
    program = op.block.program
    diff_reads = [v for v in op.inputs[1:] if id(v) in req and is_float(v)]
    live = [i for i, g in enumerate(out_cts) if g is not None]
    if not diff_reads or not live:
        return [None] * len(op.inputs)
    if program._differentiable_grads:
        return _vjp_recomputed(op, out_cts, diff_reads, live, differentiate)
    attrs = {"scope": saved_var_for(op, "cond_scope")}
    cur = program.current_block()
    ct_names = None
    for key in _BRANCHES:
        fwd_block = program.blocks[op.attrs[f"{key}_block"]]
        gblock = program._create_block(cur)
        with program._block_guard(gblock):
            phs = [ct_placeholder(gblock, op.outputs[i]) for i in live]
            if ct_names is None:
                ct_names = [p.name for p in phs]
            else:  # both grad blocks read the same cotangent names
                for p, n in zip(phs, ct_names):
                    del gblock.vars[p.name]
                    p.name = n
                    gblock.vars[n] = p
            names = [op.attrs[f"{key}_outs"][i] for i in live]
            pairs = [(resolve(fwd_block, n), p) for n, p in zip(names, phs) if n is not None]
            gs = differentiate(fwd_block, [t for t, _ in pairs], [p for _, p in pairs],
                               diff_reads)
            gs = [g if g is not None else zero_cotangent(v) for g, v in zip(gs, diff_reads)]
        attrs[f"{key}_block"] = gblock.idx
        attrs[f"{key}_grads"] = [g.name for g in gs]
    attrs["ct_vars"] = ct_names
    keep_for_backward(op, [program.blocks[attrs["true_block"]],
                           program.blocks[attrs["false_block"]]])
    outs = [cur.create_var(v.shape, v.dtype, prefix="grad") for v in diff_reads]
    cur.append_op("cond_grad", [out_cts[i] for i in live], outs, attrs, origin=op.origin_record)
    by_id = {id(v): g for v, g in zip(diff_reads, outs)}
    return [by_id.get(id(v)) for v in op.inputs]


def _vjp_recomputed(op, out_cts, diff_reads, live, differentiate):
    """The gradient as a plain `cond` (see `recompute`): each branch copies the
    forward branch and differentiates the copy, reading the predicate, the
    forward's reads and the cotangents as inputs. Differentiable again."""
    program = op.block.program
    cur = program.current_block()
    cts = [out_cts[i] for i in live]
    blocks, results = [], []
    for key in _BRANCHES:
        fwd_block = program.blocks[op.attrs[f"{key}_block"]]
        block = program._create_block(cur)
        mapping = {}
        with program._block_guard(block):
            copy_ops(fwd_block, block, mapping, {})
            names = [op.attrs[f"{key}_outs"][i] for i in live]
            pairs = [(resolve(fwd_block, n), g) for n, g in zip(names, cts) if n is not None]
            targets = [mapping.get(id(t), t) for t, _ in pairs]
            gs = differentiate(block, targets, [g for _, g in pairs], diff_reads)
            gs = [g if g is not None else zero_cotangent(v) for g, v in zip(gs, diff_reads)]
        blocks.append(block)
        results.append([g.name for g in gs])
    outs = [cur.create_var(v.shape, v.dtype, prefix="grad") for v in diff_reads]
    known = {id(v) for v in op.inputs[1:]}
    reads = list(op.inputs[1:]) + [g for g in cts if id(g) not in known]
    new = append_cond(cur, op.inputs[0], reads, outs, blocks, results,
                      [f"gradient of {v.name}" for v in diff_reads])
    new.origin_record = op.origin_record
    by_id = {id(v): g for v, g in zip(diff_reads, outs)}
    return [by_id.get(id(v)) for v in op.inputs]


# ---- names that may be undefined -----------------------------------------------------
def _undefined_outputs(op, labels):
    a = op.attrs
    for v, t, f, label in zip(op.outputs, a["true_outs"], a["false_outs"], _labels(op)):
        for side in (t, f):
            if side is None:
                yield v.name, label
            elif side in labels:
                yield v.name, labels[side]


COND = register_control_op(ControlOpDef(
    "cond", _interpret, vjp=_vjp,
    blocks=("true_block", "false_block"), results=("true_outs", "false_outs"),
    values=("labels",), value_types={"labels": optional(sequence_of(TEXT, kinds=(list,)))},
    saves=SavedScope("save_scope", "save_scope_keep"),
    check=_check, undefined_outputs=_undefined_outputs,
))

COND_GRAD = register_control_op(ControlOpDef(
    "cond_grad", _interpret_grad,
    blocks=("true_block", "false_block"), results=("true_grads", "false_grads"),
    binds=("ct_vars",), restores="scope", always_kept=True,
))
