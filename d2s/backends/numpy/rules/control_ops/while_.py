"""numpy rules of `while` and `while_grad` (`d2s/static/control_ops/while_.py`):
a Python `while` saving one tuple per trip, and its gradient walking them
in reverse."""
from __future__ import annotations

import numpy as np

from .....core.registry import register_lowering
from .....static.control_ops.while_ import WHILE, WHILE_GRAD


# ---- code generation: a Python `while`, one saved tuple per trip ----------------------
def _tuple(items):
    return f"{', '.join(items)}{',' if len(items) == 1 else ''}"


def _emit(em, op, indent):
    a = op.attrs
    n = a["num_loop_vars"]
    steps = em.ident(a["save_steps"]) if a.get("save_steps") else None
    if steps is not None:
        em.emit(f"{steps} = []", indent, op)
    phs = [em.ident(name) for name in a["loop_vars"]]
    inits = [em.ident(v.name) for v in op.inputs[:n]]
    if phs:
        em.emit(f"{_tuple(phs)} = {_tuple(inits)}", indent, op)
    em.emit("while True:", indent, op)
    em.block(a["cond_block"], indent + 1)
    em.emit(f"if not {em.ident(a['cond_out'])}:", indent + 1, op)
    em.emit("break", indent + 2, op)
    em.block(a["body_block"], indent + 1)
    if steps is not None:
        names = em.kept(op, [a["loop_scope"], a["body_block"]])
        em.emit(f"{steps}.append({em.pack(names)})", indent + 1, op)
    outs = [em.ident(name) for name in a["body_outs"]]
    if phs:
        em.emit(f"{_tuple(phs)} = {_tuple(outs)}", indent + 1, op)
    for v, ph in zip(op.outputs, phs):
        em.emit(f"{em.ident(v.name)} = {ph}", indent, op)


def _emit_grad(em, op, indent):
    a = op.attrs
    fwd = em.forward_op(op)
    n_ct = len(a["ct_vars"])
    carried, acc, step = em.temp("carried"), em.temp("acc"), em.temp("step")
    em.globals.setdefault("_zeros_like", np.zeros_like)
    em.emit(f"{carried} = [{', '.join(em.ident(v.name) for v in op.inputs[:n_ct])}]",
            indent, op)
    zeros = ", ".join(f"_zeros_like({em.ident(v.name)})" for v in op.inputs[n_ct:])
    em.emit(f"{acc} = [{zeros}]", indent, op)
    names = em.kept(fwd, [fwd.attrs["loop_scope"], fwd.attrs["body_block"]])
    em.emit(f"for {step} in reversed({em.ident(a['steps'])}):", indent, op)
    em.unpack(names, step, indent + 1, op)
    if n_ct:
        em.emit(f"{em.pack(a['ct_vars'])} = {carried}", indent + 1, op)
    em.block(a["grad_block"], indent + 1)
    em.emit(f"{carried} = [{', '.join(em.ident(n) for n in a['loop_grads'])}]",
            indent + 1, op)
    if a["free_grads"]:
        sums = ", ".join(f"{acc}[{i}] + {em.ident(n)}" for i, n in enumerate(a["free_grads"]))
        em.emit(f"{acc} = [{sums}]", indent + 1, op)
    outs = [f"{carried}[{i}]" for i in range(n_ct)] + \
           [f"{acc}[{i}]" for i in range(len(a["free_grads"]))]
    for v, src in zip(op.outputs, outs):
        em.emit(f"{em.ident(v.name)} = {src}", indent, op)


register_lowering("numpy", WHILE, _emit)
register_lowering("numpy", WHILE_GRAD, _emit_grad)
