"""The export of d2s's control-flow ops, in one place: `cond`, `while`,
tensor arrays (`array_append`), `undefined`; and why the others have no
ONNX form (`raise`, and the gradient ops `cond_grad` / `while_grad`).

* `cond` -> `If`. A branch becomes a subgraph with no inputs that reads
  outer values by name (as a d2s sub-block reads its parent's names). An
  output that one path leaves undefined (that path returned or raised) is a
  zero placeholder there: nothing reads it on that path.
* `while` -> `Loop`. d2s tests the condition before every trip; ONNX takes
  the first test as an input and the next ones from the end of the body. So
  the condition block is emitted twice — before the loop, on the initial
  values, and at the end of the body, on the new ones — under fresh names
  (ONNX names are SSA across nested graphs). Carried values keep the shapes
  the program gives them (unknown dims stay unknown: a value may grow).
* A tensor array is a plain tensor whose axis 0 grows: `array_append` is a
  `Concat`.
* `undefined` (a name a zero-trip loop would leave unbound) is a zero
  placeholder; d2s raises `NameError` if such a value is read, an ONNX model
  reads the zeros (documented in README).
"""
from __future__ import annotations

import numpy as np

from ..core.registry import NotLowerable
from .graph import Graph, Value


class Env:
    """d2s name -> Value, chained like d2s blocks (a sub-block sees its parents')."""

    __slots__ = ("values", "parent")

    def __init__(self, parent=None):
        self.values = {}
        self.parent = parent

    def get(self, name):
        env = self
        while env is not None:
            value = env.values.get(name)
            if value is not None:
                return value
            env = env.parent
        raise KeyError(f"d2s value '{name}' has no ONNX value (an exporter bug)")

    def set(self, name, value):
        self.values[name] = value


def _zeros(graph, var):
    """A placeholder for a value no executed path defines (unknown dims are 0)."""
    shape = tuple(0 if d is None else d for d in var.shape)
    return graph.const(np.zeros(shape, var.dtype), hint="undefined")


def _scalar_bool(ns, value):
    """A predicate as `If` / `Loop` take it: one bool element, rank 0 (d2s's
    `cond` and `while_loop` have checked it is bool with one element)."""
    if value.shape == ():
        return value
    return ns.node("Reshape", value, ns.ints([]), shape=())


def _label(op):
    return op.outputs[0].name if op.outputs else op.type


# ---- cond -------------------------------------------------------------------------
def export_cond(exporter, op, graph, env):
    a = op.attrs
    pred = _scalar_bool(exporter.namespace(graph, op), env.get(op.inputs[0].name))

    def branch(key):
        sub, child = Graph(graph.names, parent=graph), Env(env)
        exporter.emit_block(a[f"{key}_block"], sub, child)
        results = [child.get(name).with_shape(v.shape) if name is not None else _zeros(sub, v)
                   for v, name in zip(op.outputs, a[f"{key}_outs"])]
        return sub.to_proto(f"{_label(op)}_{key}", results)

    then_graph, else_graph = branch("true"), branch("false")
    if not op.outputs:
        # ONNX's If needs an output; branches with nothing to hand back and no
        # side effect (any would have been refused above) do nothing.
        return
    outs = [Value(graph.names.fresh(v.name), v.dtype, v.shape) for v in op.outputs]
    graph.add_node("If", [pred], outs, {"then_branch": then_graph, "else_branch": else_graph},
                   exporter.doc(op))
    for v, value in zip(op.outputs, outs):
        env.set(v.name, value)


# ---- while ------------------------------------------------------------------------
def export_while(exporter, op, graph, env):
    a = op.attrs
    n = a["num_loop_vars"]
    scope = exporter.program.blocks[a["loop_scope"]]
    placeholders = [scope.vars[name] for name in a["loop_vars"]]

    def test(g, values):
        """The condition block on `values` (emitted into graph `g`)."""
        child = Env(env)
        for ph, value in zip(placeholders, values):
            child.set(ph.name, value)
        exporter.emit_block(a["cond_block"], g, child)
        return _scalar_bool(exporter.namespace(g, op), child.get(a["cond_out"]))

    initial = [env.get(v.name) for v in op.inputs[:n]]
    first = test(graph, initial)

    body = Graph(graph.names, parent=graph)
    body.add_input("trip", np.int64, ())
    body.add_input("running", np.bool_, ())
    carried = [body.add_input(ph.name, ph.dtype, ph.shape) for ph in placeholders]
    child = Env(env)
    for ph, value in zip(placeholders, carried):
        child.set(ph.name, value)
    exporter.emit_block(a["body_block"], body, child)
    new = [child.get(name).with_shape(ph.shape)
           for name, ph in zip(a["body_outs"], placeholders)]
    again = test(body, new)
    body_proto = body.to_proto(f"{_label(op)}_body", [again] + new)

    outs = [Value(graph.names.fresh(v.name), v.dtype, v.shape) for v in op.outputs]
    graph.add_node("Loop", [None, first] + initial, outs, {"body": body_proto},
                   exporter.doc(op))
    for v, value in zip(op.outputs, outs):
        env.set(v.name, value)


# ---- tensor arrays, undefined values ---------------------------------------------------
def export_array_append(exporter, op, graph, env):
    """`Concat(buf, value[None])`. An empty array's trailing dims may be zero
    placeholders (`array_init`): the buffer is first reshaped to
    `[-1] + value.shape` (a no-op when it holds rows)."""
    buf, value = (env.get(v.name) for v in op.inputs)
    ns = exporter.namespace(graph, op)
    value = ns.cast(value, buf.dtype)
    rows = ns.node("Reshape", buf, ns.shape_vector([-1] + [ns.dim(value, i)
                                                          for i in range(value.ndim)]))
    row = ns.node("Unsqueeze", value, ns.ints([0]))
    out = ns.node("Concat", rows, row, axis=0)
    env.set(op.outputs[0].name, out.with_shape(op.outputs[0].shape))


def export_undefined(exporter, op, graph, env):
    v = op.outputs[0]
    env.set(v.name, _zeros(graph, v).with_shape(v.shape))


CONTROL_FLOW = {
    "cond": export_cond,
    "while": export_while,
    "array_append": export_array_append,
    "undefined": export_undefined,
    "raise": NotLowerable("it raises an exception at run time; ONNX has no exceptions"),
    "cond_grad": NotLowerable("a gradient op: an exported model is the forward program"),
    "while_grad": NotLowerable("a gradient op: an exported model is the forward program"),
}
