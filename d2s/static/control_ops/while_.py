"""`while` and `while_grad`: every rule of a loop, in one place.

`while(inits..., reads...) -> outs` carries `num_loop_vars` values. Each
trip runs in a fresh child scope of the op's block where the placeholders
`loop_vars` (declared in the block `loop_scope`, the lexical parent of both
blocks) hold the carried values: `cond_block` computes `cond_out`; if it
is false the loop ends, else `body_block` runs and `body_outs` become the
next carried values. The outputs are the last carried values. The inputs
after the inits are the outer Variables the blocks read. Tracing a Python
loop into a `while` (widening types, tensor arrays, the user-facing errors)
is the front end `static.loops.while_loop`; this module is what the op means.

`while_grad(cts..., reads...) -> grads` is its gradient: when the forward's
gradient is needed it saves each trip's scope (`save_steps`, with only the
names in `save_steps_keep`); `grad_block` runs once per saved trip, last
first, with the carried cotangents bound to `ct_vars`; `loop_grads` are the
next carried cotangents, `free_grads` are summed over trips (cotangents of
the values the loop only read).
"""
from __future__ import annotations

import numpy as np

from ...core.ops import add
from ..scope import Scope, op_location
from .gradients import (GradientError, ct_placeholder, is_float,
                        keep_for_backward, resolve, saved_var_for)
from ...core.attr_schema import int_range
from .registry import ControlOpDef, SavedScope, register_control_op, type_mismatch
from .undefined import zero_cotangent


def append_while(parent, inits, reads, outs, blocks, loop_vars, cond_out, body_outs):
    """Append the op to `parent`: `blocks` are (loop scope, condition, body);
    `loop_vars` the placeholder names, `cond_out` and `body_outs` what the
    condition and the body hand back."""
    loop_block, cond_block, body_block = blocks
    return parent.append_op("while", list(inits) + list(reads), outs, {
        "cond_block": cond_block.idx, "body_block": body_block.idx,
        "loop_scope": loop_block.idx, "loop_vars": list(loop_vars),
        "cond_out": cond_out, "body_outs": list(body_outs),
        "num_loop_vars": len(loop_vars)})


def _true(value):
    return bool(np.asarray(value).reshape(()))


# ---- shape rule --------------------------------------------------------------------
def _check(op):
    a, blocks = op.attrs, op.block.program.blocks
    n = a["num_loop_vars"]
    if not (isinstance(n, int) and len(a["loop_vars"]) == len(a["body_outs"]) == n
            == len(op.outputs) and len(op.inputs) >= n):
        return (f"while: {n!r} loop variables, but {len(a['loop_vars'])} placeholders, "
                f"{len(a['body_outs'])} body results, {len(op.outputs)} outputs and "
                f"{len(op.inputs)} inputs")
    cond = blocks[a["cond_block"]].lookup(a["cond_out"])
    if cond is None or cond.dtype != np.bool_:
        return f"while: the condition {a['cond_out']!r} is not a bool value of its block"
    scope, body = blocks[a["loop_scope"]], blocks[a["body_block"]]
    for init, name, body_out, out in zip(op.inputs, a["loop_vars"], a["body_outs"],
                                         op.outputs):
        ph, result = scope.vars.get(name), body.lookup(body_out)
        if ph is None or result is None:
            return f"while: unknown loop variable {name!r} or body result {body_out!r}"
        problem = (type_mismatch("while loop variable (initial value)", ph, init)
                   or type_mismatch("while loop variable (body result)", ph, result)
                   or type_mismatch("while output", out, ph))
        if problem:
            return problem
    return None


# ---- interpretation ----------------------------------------------------------------
def _interpret(op, scope, run_block):
    a = op.attrs
    values = [scope.get(v.name) for v in op.inputs[:a["num_loop_vars"]]]
    steps = [] if a.get("save_steps") else None
    keep = a.get("save_steps_keep")
    while True:
        sub = Scope(scope)
        for name, v in zip(a["loop_vars"], values):
            sub.vars[name] = v
        run_block(a["cond_block"], sub)
        if not _true(sub.get(a["cond_out"])):
            break
        run_block(a["body_block"], sub)
        values = [sub.get(name) for name in a["body_outs"]]
        if steps is not None:
            if keep is not None:  # only what the gradient block reads
                sub.vars = {k: sub.vars[k] for k in keep if k in sub.vars}
            steps.append(sub)
    for v, val in zip(op.outputs, values):
        scope.set(v.name, val)
    if steps is not None:
        scope.set(a["save_steps"], steps)


def _interpret_grad(op, scope, run_block):
    a = op.attrs
    n_ct = len(a["ct_vars"])
    carried = [scope.get(v.name) for v in op.inputs[:n_ct]]
    free = [np.zeros_like(scope.get(v.name)) for v in op.inputs[n_ct:]]
    for fwd in reversed(scope.get(a["steps"])):
        sub = Scope(fwd)
        for name, v in zip(a["ct_vars"], carried):
            sub.vars[name] = v
        run_block(a["grad_block"], sub)
        carried = [sub.get(name) for name in a["loop_grads"]]
        free = [acc + sub.get(name) for acc, name in zip(free, a["free_grads"])]
    for v, val in zip(op.outputs, carried + free):
        scope.set(v.name, val)


# ---- vjp: one gradient block for the body, one while_grad ---------------------------
def _vjp(op, out_cts, req, differentiate):
    program = op.block.program
    a = op.attrs
    n = a["num_loop_vars"]
    init, reads = op.inputs[:n], op.inputs[n:]
    body = program.blocks[a["body_block"]]
    loop_block = program.blocks[a["loop_scope"]]
    placeholders = [loop_block.vars[name] for name in a["loop_vars"]]
    body_outs = [resolve(body, name) for name in a["body_outs"]]
    loop_idx = [j for j in range(n) if is_float(placeholders[j])]
    diff_reads = [v for v in reads if id(v) in req and is_float(v)]
    if not loop_idx or not (diff_reads or any(id(init[j]) in req for j in loop_idx)):
        return [None] * len(op.inputs)
    if program._differentiable_grads:
        raise GradientError(
            f"d2s.grad(..., create_graph=True) through a tensor `while`{op_location(op)}: "
            "a loop's gradient is not differentiated again in converted code. Compute the "
            "second derivative eagerly (call the function without to_static), or loop over "
            "a Python `range` of fixed length (unrolled: differentiable again)")
    steps = saved_var_for(op, "while_steps")
    cur = program.current_block()
    cts_in = [out_cts[j] if out_cts[j] is not None else zero_cotangent(op.outputs[j])
              for j in loop_idx]
    gblock = program._create_block(cur)
    with program._block_guard(gblock):
        phs = [ct_placeholder(gblock, placeholders[j]) for j in loop_idx]
        wrt = [placeholders[j] for j in loop_idx] + diff_reads
        gs = differentiate(body, [body_outs[j] for j in loop_idx], phs, wrt)
        gs = [g if g is not None else zero_cotangent(v) for g, v in zip(gs, wrt)]
    keep_for_backward(op, [gblock])
    k = len(loop_idx)
    outs = ([cur.create_var(init[j].shape, init[j].dtype, prefix="grad") for j in loop_idx]
            + [cur.create_var(v.shape, v.dtype, prefix="grad") for v in diff_reads])
    # (the reads start the sums of their cotangents over the trips: one that
    # may hold no value starts from its zero instead)
    starts = [zero_cotangent(v) if v.may_be_undefined else v for v in diff_reads]
    cur.append_op("while_grad", cts_in + starts, outs, {
        "grad_block": gblock.idx, "steps": steps,
        "ct_vars": [p.name for p in phs], "loop_grads": [g.name for g in gs[:k]],
        "free_grads": [g.name for g in gs[k:]]}, origin=op.origin_record)
    result = {}
    for j, g in zip(loop_idx, outs[:k]):
        result.setdefault(id(init[j]), []).append(g)
    for v, g in zip(diff_reads, outs[k:]):
        result.setdefault(id(v), []).append(g)
    grads = []
    for v in op.inputs:
        gl = result.pop(id(v), None)
        if gl is None:
            grads.append(None)
        else:
            total = gl[0]
            for extra in gl[1:]:
                total = add(total, extra)
            grads.append(total)
    return grads


# ---- names that may be undefined -----------------------------------------------------
def _undefined_outputs(op, labels):
    a = op.attrs
    n = a["num_loop_vars"]
    for init, ph, body_out, out in zip(op.inputs[:n], a["loop_vars"], a["body_outs"],
                                       op.outputs):
        for src in (init.name, body_out):
            if src in labels:
                yield ph, labels[src]
                yield out.name, labels[src]


WHILE = register_control_op(ControlOpDef(
    "while", _interpret, vjp=_vjp,
    blocks=("cond_block", "body_block"), scope_blocks=("loop_scope",), shared_scope=True,
    results=("body_outs", "cond_out"), binds=("loop_vars",), values=("num_loop_vars",),
    value_types={"num_loop_vars": int_range(0, 1 << 20)},
    saves=SavedScope("save_steps", "save_steps_keep"),
    check=_check, undefined_outputs=_undefined_outputs,
))

WHILE_GRAD = register_control_op(ControlOpDef(
    "while_grad", _interpret_grad,
    blocks=("grad_block",), results=("loop_grads", "free_grads"),
    binds=("ct_vars",), restores="steps", always_kept=True,
))
