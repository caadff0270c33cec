"""ONNX rules of `cond` and `cond_grad` (`d2s/static/control_ops/cond.py`): `rule(ex, op,
graph, env)`, `ex` the exporter (`onnx.control_flow`)."""
from __future__ import annotations

from ....core.registry import register_lowering
from ....static.control_ops.cond import COND, COND_GRAD
from ._common import NOT_EXPORTED


def _lower_onnx(ex, op, graph, env):
    """A branch becomes a subgraph with no inputs that reads outer values by
    name (as a d2s sub-block reads its parent's names). An output that one
    path leaves undefined (that path returned or raised) is a zero
    placeholder there: nothing reads it on that path."""
    a = op.attrs
    pred = ex.scalar_bool(ex.namespace(graph, op), env.get(op.inputs[0].name))

    def branch(key):
        sub, child = ex.Graph(graph.names, parent=graph), ex.Env(env)
        ex.emit_block(a[f"{key}_block"], sub, child)
        results = [child.get(name).with_shape(v.shape) if name is not None else ex.zeros(sub, v)
                   for v, name in zip(op.outputs, a[f"{key}_outs"])]
        return sub.to_proto(f"{ex.label(op)}_{key}", results)

    then_graph, else_graph = branch("true"), branch("false")
    if not op.outputs:
        # ONNX's If needs an output; branches with nothing to hand back and no
        # side effect (any would have been refused above) do nothing.
        return
    outs = [ex.Value(graph.names.fresh(v.name), v.dtype, v.shape) for v in op.outputs]
    graph.add_node("If", [pred], outs, {"then_branch": then_graph, "else_branch": else_graph},
                   ex.doc(op))
    for v, value in zip(op.outputs, outs):
        env.set(v.name, value)


register_lowering("onnx", COND, _lower_onnx)
register_lowering("onnx", COND_GRAD, NOT_EXPORTED)
