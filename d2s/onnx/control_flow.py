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
* A tensor array is a plain tensor whose axis 0 holds the rows. An array
  the loop body only appends to is a `Loop` scan output (the Loop stacks
  the rows); any other `array_append` is a `Concat`.
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
    scans = _scanned_arrays(exporter, op, placeholders)
    carried = [k for k in range(n) if k not in scans]

    def test(g, values):
        """The condition block on `values` (emitted into graph `g`)."""
        child = Env(env)
        for k, value in zip(carried, values):
            child.set(placeholders[k].name, value)
        exporter.emit_block(a["cond_block"], g, child)
        return _scalar_bool(exporter.namespace(g, op), child.get(a["cond_out"]))

    initial = [env.get(v.name) for v in op.inputs[:n]]
    first = test(graph, [initial[k] for k in carried])

    body = Graph(graph.names, parent=graph)
    body.add_input("trip", np.int64, ())
    body.add_input("running", np.bool_, ())
    child = Env(env)
    for k in carried:
        ph = placeholders[k]
        child.set(ph.name, body.add_input(ph.name, ph.dtype, ph.shape))
    exporter.emit_block(a["body_block"], body, child, skip=set(map(id, scans.values())))
    new = [child.get(a["body_outs"][k]).with_shape(placeholders[k].shape) for k in carried]
    rows = [exporter.namespace(body, app).cast(child.get(app.inputs[1].name),
                                               placeholders[k].dtype)
            for k, app in scans.items()]
    again = test(body, new)
    body_proto = body.to_proto(f"{_label(op)}_body", [again] + new + rows)

    outs = [Value(graph.names.fresh(op.outputs[k].name), op.outputs[k].dtype,
                  op.outputs[k].shape) for k in carried + list(scans)]
    graph.add_node("Loop", [None, first] + [initial[k] for k in carried], outs,
                   {"body": body_proto}, exporter.doc(op))
    for k, value in zip(carried, outs):
        env.set(op.outputs[k].name, value)
    for (k, app), stacked in zip(scans.items(), outs[len(carried):]):
        ns = exporter.namespace(graph, app)
        env.set(op.outputs[k].name, _joined(ns, initial[k], stacked, op.outputs[k].shape))


def _scanned_arrays(exporter, op, placeholders):
    """{loop value index: its append op} for the tensor arrays the body only
    appends to (one `array_append` per trip, outside any branch, and nothing
    else reading the array in the loop): ONNX scan outputs, which the Loop
    stacks itself, instead of a carried tensor copied into a longer one on
    every trip."""
    a = op.attrs
    body = exporter.blocks[a["body_block"]]
    read = _names_read(exporter, [a["cond_block"], a["body_block"]])
    scans = {}
    for k, ph in enumerate(placeholders):
        if not ph.is_array:
            continue
        out = a["body_outs"][k]
        append = next((o for o in body if o.type == "array_append"
                       and o.outputs[0].name == out and o.inputs[0].name == ph.name), None)
        if append is not None and read.count(ph.name) == 1 and out not in read:
            scans[k] = append  # the array is read by the append only, its result by nothing
    return scans


def _names_read(exporter, block_ids):
    """Every read of a name by the ops of these blocks and the blocks nested in
    them (op inputs and the results sub-blocks hand back), with repeats."""
    names = []
    for idx in block_ids:
        for o in exporter.blocks[idx]:
            names += [v.name for v in o.inputs] + exporter.view.block_results(o)
            names += _names_read(exporter, exporter.view.sub_block_ids(o))
    return names


def _joined(ns, buf, rows, shape):
    """The array after the loop: what it held before (usually nothing) and the
    rows the loop stacked."""
    rows = rows.with_shape(shape)
    if buf.shape is not None and buf.shape[:1] == (0,):
        return rows
    return _concat_rows(ns, buf, rows, shape)


def _concat_rows(ns, buf, rows, shape):
    """`Concat(buf, rows)` along axis 0. An empty array's trailing dims may be
    zero placeholders (`array_init`): `buf` is first reshaped to
    `[-1] + rows.shape[1:]` (a no-op when it holds rows)."""
    dims = [-1] + [ns.dim(rows, i) for i in range(1, len(shape))]
    return ns.node("Concat", ns.node("Reshape", buf, ns.shape_vector(dims)), rows,
                   axis=0).with_shape(shape)


# ---- tensor arrays, undefined values ---------------------------------------------------
def export_array_append(exporter, op, graph, env):
    """An append the loop cannot scan: `Concat(buf, value[None])`."""
    buf, value = (env.get(v.name) for v in op.inputs)
    ns = exporter.namespace(graph, op)
    row = ns.node("Unsqueeze", ns.cast(value, buf.dtype), ns.ints([0]))
    shape = op.outputs[0].shape
    env.set(op.outputs[0].name, _concat_rows(ns, buf, row.with_shape((1,) + shape[1:]), shape))


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
