"""numpy rules of `cond` and `cond_grad` (`d2s/static/control_ops/cond.py`):
an `if` whose branches pack what the gradient reads, and its gradient
unpacking them."""
from __future__ import annotations

from .....core.registry import register_lowering
from .....static.control_ops.cond import _BRANCHES, COND, COND_GRAD, _labels


# ---- code generation: an `if`, packing what the gradient reads ----------------------
def _emit(em, op, indent):
    a = op.attrs
    em.emit(f"if {em.ident(op.inputs[0].name)}:", indent, op)
    for key in _BRANCHES:
        if key == "false":
            em.emit("else:", indent, op)
        em.block(a[f"{key}_block"], indent + 1)
        for v, name, label in zip(op.outputs, a[f"{key}_outs"], _labels(op)):
            src = em.ident(name) if name is not None else f"_Undefined({em.constant(label)})"
            em.emit(f"{em.ident(v.name)} = {src}", indent + 1, op)
        if a.get("save_scope"):
            names = em.kept(op, [a[f"{key}_block"]])
            em.emit(f"{em.ident(a['save_scope'])} = ({key == 'true'}, {em.pack(names)})",
                    indent + 1, op)


def _emit_grad(em, op, indent):
    a = op.attrs
    fwd = em.forward_op(op)
    branch, values = em.temp("branch"), em.temp("saved")
    em.emit(f"{branch}, {values} = {em.ident(a['scope'])}", indent, op)
    em.emit(f"if {branch}:", indent, op)
    for key in _BRANCHES:
        if key == "false":
            em.emit("else:", indent, op)
        em.unpack(em.kept(fwd, [fwd.attrs[f"{key}_block"]]), values, indent + 1, op)
        for ct, v in zip(a["ct_vars"], op.inputs):
            em.emit(f"{em.ident(ct)} = {em.ident(v.name)}", indent + 1, op)
        em.block(a[f"{key}_block"], indent + 1)
        for v, name in zip(op.outputs, a[f"{key}_grads"]):
            em.emit(f"{em.ident(v.name)} = {em.ident(name)}", indent + 1, op)


register_lowering("numpy", COND, _emit)
register_lowering("numpy", COND_GRAD, _emit_grad)
