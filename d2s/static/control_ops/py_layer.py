"""`py_layer`: the results of a user's `PyLayer.forward`, differentiated by
its own `backward` (`d2s.autograd.PyLayer` in converted code).

`py_layer(results..., inputs...) -> outs {layer, num_outputs}` hands out its
first `num_outputs` inputs unchanged: the forward is traced as ordinary ops
before it, so every executor runs it as it runs any op. Only backward sees
the op: its vjp gives the forward's ops no cotangent (the user's rule
replaces theirs) and calls `layer.backward(ctx, *cotangents)` with the
program's values while backward is built, so the user's backward becomes
ordinary gradient ops (themselves differentiable: a second derivative
differentiates them). `layer` is the live (class, context) pair: a program
holding this op runs in this process and cannot be saved to a file.
"""
from __future__ import annotations

from ...core.attr_schema import int_range
from .registry import ControlOpDef, register_control_op
from .undefined import zero_cotangent


class LayerCall:
    """The class and context of one `PyLayer.apply` in a program (an op
    attribute: printed by name, never saved)."""
    __slots__ = ("cls", "ctx", "backward")

    def __init__(self, cls, ctx, backward):
        self.cls, self.ctx, self.backward = cls, ctx, backward

    def __repr__(self):
        return f"<PyLayer {self.cls.__qualname__}>"

    def not_saved_because(self):
        return (f"cannot save a program that calls PyLayer {self.cls.__qualname__}.apply: "
                "its backward is Python code, not ops. Save a program without it (e.g. "
                "the forward written with d2s ops, whose gradient d2s derives)")


def append_py_layer(block, cls, ctx, results, inputs, backward):
    """Outputs standing for `results` (Variables `cls.forward` computed from
    `inputs`) whose gradient is `backward` (`cls.backward`, converted)."""
    outs = [block.create_var(v.shape, v.dtype, prefix="py_layer") for v in results]
    block.append_op("py_layer", list(results) + list(inputs), outs,
                    {"layer": LayerCall(cls, ctx, backward), "num_outputs": len(results)})
    return outs


def _interpret(op, scope, run_block):
    for v, src in zip(op.outputs, op.inputs):
        scope.set(v.name, scope.get(src.name))


def _check(op):
    n = op.attrs.get("num_outputs")
    if not isinstance(op.attrs.get("layer"), LayerCall):
        return "py_layer: a PyLayer's op exists only in the process that traced it"
    if n != len(op.outputs) or len(op.inputs) < n:
        return f"py_layer: {len(op.outputs)} outputs, num_outputs={n!r}"
    return None


def _vjp(op, out_cts, req, differentiate):
    call = op.attrs["layer"]
    n = op.attrs["num_outputs"]
    program = op.block.program
    inputs = op.inputs[n:]
    cts = [g if g is not None else zero_cotangent(v) for g, v in zip(out_cts, op.outputs)]
    with call.ctx._values_of(program):
        grads = call.backward(call.ctx, *cts)
    grads = _as_grads(call.cls, grads, inputs, program)
    return [None] * n + grads


def _as_grads(cls, grads, inputs, program):
    grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
    name = cls.__qualname__
    if len(grads) != len(inputs):
        raise ValueError(f"{name}.backward returned {len(grads)} gradients for "
                         f"{len(inputs)} tensor inputs of forward: return one per tensor "
                         "argument, in order (None where there is none)")
    out = []
    for k, (g, x) in enumerate(zip(grads, inputs)):
        if g is not None:
            g = program._builder.to_var(g)
            if len(g.shape) != len(x.shape) or any(
                    a is not None and b is not None and a != b for a, b in zip(g.shape, x.shape)):
                raise ValueError(f"{name}.backward: the gradient of tensor input {k} has shape "
                                 f"{list(g.shape)}, the input {list(x.shape)}")
        out.append(g)
    return out


PY_LAYER = register_control_op(ControlOpDef(
    "py_layer", _interpret, vjp=_vjp, values=("layer", "num_outputs"),
    value_types={"num_outputs": int_range(0)}, check=_check,
))
