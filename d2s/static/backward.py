"""Static reverse-mode autodiff: the registry's vjp rules applied to Variables.

`backward_block` walks a block's ops from the targets back, calling each
op's vjp rule with Variables while the builder appends the resulting grad ops
to the block under construction. It visits the ops in the order the eager
tape's walk (`core.autograd`) visits the nodes the same code records, and
sums the cotangents of a value in the same order, so a gradient computed by
a program is bitwise the one eager mode computes (floating-point sums of
three or more terms depend on their order). `cond` and `while` are differentiated by building
gradient sub-blocks from their bodies (recursively, with the same walk) and
one `cond_grad` / `while_grad` op that runs them against the forward scopes
the forward op saved (one per branch taken, or one per loop iteration).
"""
from __future__ import annotations

import contextlib

import numpy as np

from ..core import state
from ..core.dtypes import is_floating
from ..core.ops import add, zeros_like
from ..core.registry import OPS
from .ir import Variable


class GradientError(RuntimeError):
    pass


def _float(v):
    return is_floating(v.dtype)


def _differentiable(op, through_grad_ops=True):
    if op.is_grad and not through_grad_ops:
        return False
    return op.type in ("cond", "while") or bool(OPS.get(op.type) and OPS[op.type].vjp)


def _requires(ops, wrt_ids, through_grad_ops=True, floats_only=True):
    """Ids of Variables that depend on `wrt` through differentiable paths.

    With `floats_only=False`: every output of a differentiable op reading such
    a value, whatever its dtype: the ops that have a node on the eager tape
    (which records an op when any input requires a gradient)."""
    req = set(wrt_ids)
    for op in ops:
        if any(id(v) in req for v in op.inputs) and _differentiable(op, through_grad_ops):
            req.update(id(o) for o in op.outputs if not floats_only or _float(o))
    return req


def grad_walk_order(ops, targets, recorded):
    """The ops a backward from `targets` visits, in the order eager's tape walk
    visits the nodes of the same computation: `core.autograd` sorts nodes by a
    depth-first search from the loss (inputs pushed in order, the last popped
    first) and walks that order reversed. `recorded` holds the ids of values
    eager would give a node (see `_requires(floats_only=False)`); only their
    producers are followed, as only they would be on the tape."""
    producer = {}
    for op in ops:
        for v in op.outputs:
            producer[id(v)] = op
    order, seen = [], set()
    stack = [(producer[id(t)], False) for t in reversed(targets)
             if id(t) in producer and id(t) in recorded]
    while stack:
        op, done = stack.pop()
        if done:
            order.append(op)
            continue
        if id(op) in seen:
            continue
        seen.add(id(op))
        stack.append((op, True))
        for v in op.inputs:
            p = producer.get(id(v))
            if p is not None and id(p) not in seen and id(v) in recorded:
                stack.append((p, False))
    return order[::-1]


def _accumulate(grads, var, g):
    prev = grads.get(id(var))
    grads[id(var)] = g if prev is None else add(prev, g)


def backward_block(block, targets, cts, wrt, seeds=None, through_grad_ops=True):
    """Append to the current block the ops computing d(targets)/d(wrt).

    Returns a list aligned with `wrt`: a Variable, or None where no path exists.
    `seeds` (id of a `wrt` Variable -> Variable) start a gradient's sum, as an
    eager leaf's existing `.grad` does: the result is `seed + g1 + g2 ...` in
    eager's order. With `through_grad_ops=False` gradients do not flow through
    ops an earlier backward appended (eager runs its backward without a tape).
    """
    grads = dict(seeds or {})
    for t, g in zip(targets, cts):
        _accumulate(grads, t, g)
    wrt_ids = {id(w) for w in wrt}
    req = _requires(block.ops, wrt_ids, through_grad_ops)
    recorded = _requires(block.ops, wrt_ids, through_grad_ops, floats_only=False)
    for op in grad_walk_order(block.ops, targets, recorded):
        if not any(id(o) in grads for o in op.outputs):
            continue
        if not any(id(v) in req for v in op.inputs):
            continue
        out_cts = [grads.get(id(o)) for o in op.outputs]
        if op.type == "cond":
            in_grads = _cond_vjp(op, out_cts, req)
        elif op.type == "while":
            in_grads = _while_vjp(op, out_cts, req)
        else:
            in_grads = _op_vjp(op, out_cts)
        for v, g in zip(op.inputs, in_grads):
            if g is not None and id(v) in req:
                _accumulate(grads, v, g)
    return [grads.get(id(w)) for w in wrt]


def _op_vjp(op, out_cts):
    opdef = OPS[op.type]
    if opdef.vjp is None:
        return [None] * len(op.inputs)
    if opdef.num_outputs == 1:
        g = out_cts[0] if out_cts[0] is not None else zeros_like(op.outputs[0])
        res = opdef.vjp(g, op.outputs[0], *op.inputs, **op.attrs)
    else:  # multi-output rules get None for outputs nothing used (see registry)
        res = opdef.vjp(tuple(out_cts), tuple(op.outputs), *op.inputs, **op.attrs)
    return list(res)


def _ct_placeholder(block, like):
    return block.create_var(like.shape, like.dtype, prefix="ct")


def _cond_vjp(op, out_cts, req):
    program = op.block.program
    free = op.inputs[1:]
    diff_free = [v for v in free if id(v) in req and _float(v)]
    live = [i for i, g in enumerate(out_cts) if g is not None]
    if not diff_free or not live:
        return [None] * len(op.inputs)
    if not op.attrs.get("save_scope"):
        op.attrs["save_scope"] = op.block.create_var((), np.dtype(object), prefix="cond_scope").name
    scope_name = op.attrs["save_scope"]
    cur = program.current_block()
    attrs = {"scope": scope_name}
    ct_names = None
    for key in ("true", "false"):
        fwd_block = program.blocks[op.attrs[f"{key}_block"]]
        gblock = program._create_block(cur)
        with program._block_guard(gblock):
            phs = [_ct_placeholder(gblock, op.outputs[i]) for i in live]
            if ct_names is None:
                ct_names = [p.name for p in phs]
            else:  # both grad blocks read the same cotangent names
                for p, n in zip(phs, ct_names):
                    del gblock.vars[p.name]
                    p.name = n
                    gblock.vars[n] = p
            names = [op.attrs[f"{key}_outs"][i] for i in live]
            pairs = [(_resolve(fwd_block, n), p) for n, p in zip(names, phs) if n is not None]
            gs = backward_block(fwd_block, [t for t, _ in pairs], [p for _, p in pairs],
                                diff_free)
            gs = [g if g is not None else zeros_like(v) for g, v in zip(gs, diff_free)]
        attrs[f"{key}_block"] = gblock.idx
        attrs[f"{key}_grads"] = [g.name for g in gs]
    attrs["ct_vars"] = ct_names
    _keep_for_backward(op, "save_scope_keep",
                       [program.blocks[attrs["true_block"]], program.blocks[attrs["false_block"]]])
    outs = [cur.create_var(v.shape, v.dtype, prefix="grad") for v in diff_free]
    cur.append_op("cond_grad", [out_cts[i] for i in live], outs, attrs, origin=op.origin)
    by_id = {id(v): g for v, g in zip(diff_free, outs)}
    return [by_id.get(id(v)) for v in op.inputs]


def names_read(ops):
    """Every variable name `ops` (and their sub-blocks, and the scopes they
    restore) may read at run time."""
    names, todo = set(), list(ops)
    while todo:
        op = todo.pop()
        names.update(v.name for v in op.inputs)
        for key in ("scope", "steps"):
            if key in op.attrs:
                names.add(op.attrs[key])
        for sub in op.sub_blocks():
            todo.extend(sub.ops)
    return frozenset(names)


def _keep_for_backward(op, key, grad_blocks):
    """Record on the forward `cond`/`while` op which of its scope's values its
    gradient blocks read: the executor saves only those, not the whole scope."""
    names = set(op.attrs.get(key, ()))
    for block in grad_blocks:
        names |= names_read(block.ops)
    op.attrs[key] = sorted(names)


def _resolve(block, name):
    var = block.lookup(name)
    if var is None:
        raise GradientError(f"variable {name!r} not found from block {block.idx}")
    return var


def _while_vjp(op, out_cts, req):
    program = op.block.program
    a = op.attrs
    n = a["num_loop_vars"]
    init, free = op.inputs[:n], op.inputs[n:]
    body = program.blocks[a["body_block"]]
    loop_block = program.blocks[a["loop_scope"]]
    placeholders = [loop_block.vars[name] for name in a["loop_vars"]]
    body_outs = [_resolve(body, name) for name in a["body_outs"]]
    loop_idx = [j for j in range(n) if _float(placeholders[j])]
    diff_free = [v for v in free if id(v) in req and _float(v)]
    if not loop_idx or not (diff_free or any(id(init[j]) in req for j in loop_idx)):
        return [None] * len(op.inputs)
    if not a.get("save_steps"):
        a["save_steps"] = op.block.create_var((), np.dtype(object), prefix="while_steps").name
    cur = program.current_block()
    cts_in = [out_cts[j] if out_cts[j] is not None else zeros_like(op.outputs[j])
              for j in loop_idx]
    gblock = program._create_block(cur)
    with program._block_guard(gblock):
        phs = [_ct_placeholder(gblock, placeholders[j]) for j in loop_idx]
        wrt = [placeholders[j] for j in loop_idx] + diff_free
        gs = backward_block(body, [body_outs[j] for j in loop_idx], phs, wrt)
        gs = [g if g is not None else zeros_like(v) for g, v in zip(gs, wrt)]
    _keep_for_backward(op, "save_steps_keep", [gblock])
    k = len(loop_idx)
    outs = ([cur.create_var(init[j].shape, init[j].dtype, prefix="grad") for j in loop_idx]
            + [cur.create_var(v.shape, v.dtype, prefix="grad") for v in diff_free])
    cur.append_op("while_grad", cts_in + diff_free, outs, {
        "grad_block": gblock.idx, "steps": a["save_steps"],
        "ct_vars": [p.name for p in phs], "loop_grads": [g.name for g in gs[:k]],
        "free_grads": [g.name for g in gs[k:]]}, origin=op.origin)
    result = {}
    for j, g in zip(loop_idx, outs[:k]):
        result.setdefault(id(init[j]), []).append(g)
    for v, g in zip(diff_free, outs[k:]):
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


# ---- public API -------------------------------------------------------------------------
def gradients(targets, inputs, target_gradients=None):
    """Append backward ops; return d(sum of targets)/d(input) Variables (None: no path)."""
    targets = _as_list(targets)
    for v in targets:
        if not isinstance(v, Variable):
            raise TypeError(f"gradients: targets must be static Variables, got {type(v).__name__}")
    program = targets[0].block.program
    inputs = [program._builder.to_var(v) for v in _as_list(inputs)]
    gb = program.global_block()
    for v in targets:
        if v.block is not gb:
            raise ValueError(f"gradients: target '{v.name}' is not in the global block")
    if target_gradients is None:
        target_gradients = [None] * len(targets)
    target_gradients = _as_list(target_gradients)
    with state.building(program._builder), program._block_guard(gb), grad_ops(program):
        cts = [g if g is not None else bind_ones_like(t) for t, g in zip(targets, target_gradients)]
        return backward_block(gb, targets, cts, inputs)


@contextlib.contextmanager
def grad_ops(program):
    """Ops appended inside are marked `is_grad` (see executor: a cotangent of a
    name no path defined is a zero there, not an error)."""
    prev = program._building_grad
    program._building_grad = True
    try:
        yield
    finally:
        program._building_grad = prev


def bind_ones_like(t):
    from ..core.ops import ones_like
    return ones_like(t)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


class BackwardProgram:
    """A traced function's forward program copied, with its backward appended.

    Built on a copy (`Program.clone`): differentiating marks forward `cond` /
    `while` ops to save their scopes and appends grad ops, and neither may
    show in the forward program users print, save and run without gradients.
    `program`'s block 0 holds the forward ops (`forward_ops`), then the
    backward (`backward_ops`), which reads cotangents named `ct_names` (for
    the floating outputs `diff_outs`) and writes `grad_names` (aligned with
    `wrt`; None where no gradient exists); `reads` is every name it reads.
    """

    def __init__(self, forward, outputs, wrt):
        self.program = program = forward.clone()
        gb = program.global_block()
        self.n_forward = len(gb.ops)
        outputs = [program.counterpart(v) for v in outputs]
        wrt = [program.counterpart(v) for v in wrt]
        self.diff_outs = [i for i, v in enumerate(outputs) if is_floating(v.dtype)]
        with state.building(program._builder), program._block_guard(gb), grad_ops(program):
            cts = [gb.create_var(outputs[i].shape, outputs[i].dtype, prefix="ct")
                   for i in self.diff_outs]
            grads = backward_block(gb, [outputs[i] for i in self.diff_outs], cts, wrt)
        self.ct_names = [c.name for c in cts]
        self.grad_names = [None if g is None or not is_floating(w.dtype) else g.name
                           for g, w in zip(grads, wrt)]
        self.reads = names_read(self.backward_ops)

    @property
    def forward_ops(self):
        return self.program.global_block().ops[:self.n_forward]

    @property
    def backward_ops(self):
        return self.program.global_block().ops[self.n_forward:]


def append_backward(loss, parameters):
    """Gradients of `loss` w.r.t. the Variables standing for `parameters` (eager
    Tensors captured by the program); returns [(param_var, grad_var)]."""
    builder = loss.block.program._builder
    pvars = [builder.capture(p) for p in parameters]
    grads = gradients([loss], pvars)
    return list(zip(pvars, grads))
