"""Static reverse-mode autodiff: the registry's vjp rules applied to Variables.

`backward_block` walks a block's ops from the targets back, calling each
op's vjp rule with Variables while the builder appends the resulting grad ops
to the block under construction. It visits the ops in the order the eager
tape's walk (`core.autograd`) visits the nodes the same code records, and
sums the cotangents of a value in the same order, so a gradient computed by
a program is bitwise the one eager mode computes (floating-point sums of
three or more terms depend on their order). `cond` and `while` are
differentiated by their homes (`control_ops`): gradient sub-blocks built
from their bodies (recursively, with this same walk) and one `cond_grad` /
`while_grad` op that runs them against the forward scopes the forward op
saved (one per branch taken, or one per loop iteration).
"""
from __future__ import annotations

import contextlib

import numpy as np

from ..core import state
from ..core.dtypes import is_floating
from ..core.ops import add, zeros_like
from ..core.registry import OPS
from .control_ops import control_op, names_read
from .control_ops.gradients import GradientError, second_derivative_error
from .definedness import maybe_undefined
from .ir import Variable

__all__ = ["GradientError", "backward_block", "gradients", "append_backward",
           "BackwardProgram", "names_read", "output_sources"]


def _float(v):
    """A value gradients flow through: floating, or complex (the Fourier
    transforms' results: eager's tape differentiates through them too)."""
    return is_floating(v.dtype) or np.dtype(v.dtype).kind == "c"


def _differentiable(op, through_grad_ops=True, walked=False):
    """Whether gradients flow through `op`. `walked`: as a backward walk sees
    it, which also reaches `cond_grad` / `while_grad` (to refuse them: see
    `control_ops.gradients.second_derivative_error`) where they would
    otherwise be a silent zero."""
    if op.is_grad and not through_grad_ops:
        return False
    decl = control_op(op.type)
    if decl is not None:  # cond, while: their homes differentiate them
        return decl.vjp is not None or walked and bool(decl.restores)
    return bool(OPS.get(op.type) and OPS[op.type].vjp)


def _requires(ops, wrt_ids, through_grad_ops=True, floats_only=True, walked=False):
    """Ids of Variables that depend on `wrt` through differentiable paths.

    With `floats_only=False`: every output of a differentiable op reading such
    a value, whatever its dtype: the ops that have a node on the eager tape
    (which records an op when any input requires a gradient)."""
    req = set(wrt_ids)
    for op in ops:
        if any(id(v) in req for v in op.inputs) and _differentiable(op, through_grad_ops,
                                                                    walked):
            req.update(id(o) for o in op.outputs if not floats_only or _float(o))
    return req


def output_sources(ops, sources, outputs):
    """Per Variable of `outputs`: the set of keys of `sources` ({id(Variable):
    key}) it depends on through differentiable ops. An eager result requires a
    gradient when one of its sources does; a `detach`, a non-float value or an
    op with no vjp cuts the path (cond/while count as reading all their inputs,
    a conservative answer where eager's depends on the path taken)."""
    deps = {vid: frozenset((key,)) for vid, key in sources.items()}
    for op in ops:
        found = [deps[id(v)] for v in op.inputs if id(v) in deps]
        if found and _differentiable(op):
            union = frozenset().union(*found)
            for o in op.outputs:
                if _float(o):
                    deps[id(o)] = union | deps.get(id(o), frozenset())
    return [deps.get(id(v), frozenset()) for v in outputs]


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
    walked = block.program._refuse_grad_ops
    req = _requires(block.ops, wrt_ids, through_grad_ops, walked=walked)
    recorded = _requires(block.ops, wrt_ids, through_grad_ops, floats_only=False,
                         walked=walked)
    for op in grad_walk_order(block.ops, targets, recorded):
        if not any(id(o) in grads for o in op.outputs):
            continue
        if not any(id(v) in req for v in op.inputs):
            continue
        out_cts = [grads.get(id(o)) for o in op.outputs]
        decl = control_op(op.type)
        if decl is not None:  # its home builds the gradient op (and its blocks)
            if decl.vjp is None and decl.restores:
                raise second_derivative_error(op)
            in_grads = ([None] * len(op.inputs) if decl.vjp is None
                        else decl.vjp(op, out_cts, req, backward_block))
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


# ---- public API -------------------------------------------------------------------------
def gradients(targets, inputs, target_gradients=None, create_graph=False):
    """Append backward ops; return d(sum of targets)/d(input) Variables (None: no path).
    `create_graph`: the gradients will be differentiated again, so tensor
    `if`s get gradients made of ordinary ops (`control_ops.recompute`)."""
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
    mark_undefined(program)
    previous = program._differentiable_grads, program._refuse_grad_ops
    # (a walk reaching the gradient of an `if`/`while` built to be run, not
    # differentiated, raises: in converted code a d2s.grad through one would
    # miss that term silently)
    program._differentiable_grads, program._refuse_grad_ops = bool(create_graph), True
    try:
        with state.building(program._builder), program._block_guard(gb), grad_ops(program):
            cts = [g if g is not None else bind_ones_like(t)
                   for t, g in zip(targets, target_gradients)]
            return backward_block(gb, targets, cts, inputs)
    finally:
        program._differentiable_grads, program._refuse_grad_ops = previous


def mark_undefined(program):
    """Flag every Variable a run may leave with no value (`may_be_undefined`),
    as the definedness analysis finds them: the tracer flags those it makes,
    a program loaded from an older file has no flags. Backward reads the
    flags to give such values zero cotangents that read nothing
    (`control_ops.undefined.zero_cotangent`)."""
    names = maybe_undefined({b.idx: b.ops for b in program.blocks})
    if names:
        for block in program.blocks:
            for name, var in block.vars.items():
                if name in names:
                    var.may_be_undefined = True


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
        mark_undefined(program)
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
