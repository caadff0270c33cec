"""A block's ops copied into another block under fresh names: the forward
of a branch recomputed where its gradient is built.

A `cond`'s gradient is normally a `cond_grad` running gradient blocks
against the scope the forward saved, which is itself not differentiable.
When the gradient must be differentiated again (`d2s.grad(...,
create_graph=True)` in converted code) the gradient is a plain `cond`
instead, whose branches recompute the forward branch (these copies) and
then differentiate it in place: every op of it is an ordinary op with a
vjp, so a second backward walks it as any other.
"""
from __future__ import annotations

from .gradients import GradientError
from .registry import CONTROL_OPS


def _copy_var(block, v):
    new = block.create_var(v.shape, v.dtype, prefix=v.name.rsplit("_", 1)[0] or "v",
                           stop_gradient=v.stop_gradient)
    new.weak, new.is_array = v.weak, v.is_array
    new.may_be_undefined = v.may_be_undefined
    return new


def _mapped_names(value, names):
    if isinstance(value, str):
        return names.get(value, value)
    return [None if n is None else names.get(n, n) for n in value]


def copy_ops(src, dst, mapping, names):
    """Append to `dst` a copy of each op of `src` (and of their sub-blocks,
    as new blocks). `mapping` (id of a Variable -> its copy) and `names`
    (name -> the copy's name) grow with every value copied; a value from
    outside `src` is read as it is. Ops that draw random numbers are
    refused: a recomputation would draw others."""
    program = dst.program
    for op in src.ops:
        decl = CONTROL_OPS.get(op.type)
        _refuse_draws(op, decl)
        attrs = dict(op.attrs)
        if op.type == "py_layer":
            raise GradientError("a second derivative through a tensor `if` whose branch "
                                "calls a PyLayer: its backward reads the forward's values, "
                                "which a recomputed branch does not have. Call it outside "
                                "the `if`")
        if decl is not None:
            if decl.restores:
                raise GradientError(f"a gradient op ({op.type}) inside a branch cannot be "
                                    "recomputed for a second derivative")
            for key in decl.runtime_attrs:
                attrs.pop(key, None)
            blocks = {}
            for key in decl.scope_blocks + decl.blocks:
                old = program.blocks[attrs[key]]
                parent = blocks.get(old.parent_idx, dst)
                new = blocks[old.idx] = program._create_block(parent)
                for v in old.vars.values():
                    copy = mapping[id(v)] = _copy_var(new, v)
                    names[v.name] = copy.name
                attrs[key] = new.idx
            for key in decl.scope_blocks + decl.blocks:
                old_idx = op.attrs[key]
                new = blocks[old_idx]
                with program._block_guard(new):
                    copy_ops(program.blocks[old_idx], new, mapping, names)
            for key in decl.results + decl.binds:
                if attrs.get(key) is not None:
                    attrs[key] = _mapped_names(attrs[key], names)
        inputs = [mapping.get(id(v), v) for v in op.inputs]
        outputs = []
        for v in op.outputs:
            copy = mapping.get(id(v))
            if copy is None:  # (a sub-block's values were declared with it)
                copy = mapping[id(v)] = _copy_var(dst, v)
                names[v.name] = copy.name
            outputs.append(copy)
        dst.append_op(op.type, inputs, outputs, attrs, origin=op.origin_record)


def _refuse_draws(op, decl):
    from ...core.registry import OPS
    opdef = OPS.get(op.type)
    if decl is None and opdef is not None and opdef.stateful:
        raise GradientError(
            f"a second derivative through a tensor `if` whose branch draws random numbers "
            f"(op '{op.type}'): its gradient recomputes the branch, which would draw "
            "others. Draw them before the `if` and pass them in")
