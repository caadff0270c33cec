"""ONNX rules of `while` and `while_grad` (`d2s/static/control_ops/while_.py`):
`rule(ex, op, graph, env)`, `ex` the exporter (`onnx.control_flow`)."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering
from ....static.control_ops.registry import block_results, sub_block_ids
from ....static.control_ops.while_ import WHILE, WHILE_GRAD
from ._common import NOT_EXPORTED


def _lower_onnx(ex, op, graph, env):
    """d2s tests the condition before every trip; ONNX takes the first test as
    an input and the next ones from the end of the body. So the condition
    block is emitted twice — before the loop, on the initial values, and at
    the end of the body, on the new ones — under fresh names (ONNX names are
    SSA across nested graphs). Carried values keep the shapes the program
    gives them (unknown dims stay unknown: a value may grow). A tensor array
    the body only appends to is a scan output (see `_scanned_arrays`)."""
    a = op.attrs
    n = a["num_loop_vars"]
    scope = ex.program.blocks[a["loop_scope"]]
    placeholders = [scope.vars[name] for name in a["loop_vars"]]
    scans = _scanned_arrays(ex, op, placeholders)
    carried = [k for k in range(n) if k not in scans]

    def test(g, values):
        """The condition block on `values` (emitted into graph `g`)."""
        child = ex.Env(env)
        for k, value in zip(carried, values):
            child.set(placeholders[k].name, value)
        ex.emit_block(a["cond_block"], g, child)
        return ex.scalar_bool(ex.namespace(g, op), child.get(a["cond_out"]))

    initial = [env.get(v.name) for v in op.inputs[:n]]
    first = test(graph, [initial[k] for k in carried])

    body = ex.Graph(graph.names, parent=graph)
    body.add_input("trip", np.int64, ())
    body.add_input("running", np.bool_, ())
    child = ex.Env(env)
    for k in carried:
        ph = placeholders[k]
        child.set(ph.name, body.add_input(ph.name, ph.dtype, ph.shape))
    ex.emit_block(a["body_block"], body, child, skip=set(map(id, scans.values())))
    new = [child.get(a["body_outs"][k]).with_shape(placeholders[k].shape) for k in carried]
    rows = [ex.namespace(body, app).cast(child.get(app.inputs[1].name), placeholders[k].dtype)
            for k, app in scans.items()]
    again = test(body, new)
    body_proto = body.to_proto(f"{ex.label(op)}_body", [again] + new + rows)

    outs = [ex.Value(graph.names.fresh(op.outputs[k].name), op.outputs[k].dtype,
                     op.outputs[k].shape) for k in carried + list(scans)]
    graph.add_node("Loop", [None, first] + [initial[k] for k in carried], outs,
                   {"body": body_proto}, ex.doc(op))
    for k, value in zip(carried, outs):
        env.set(op.outputs[k].name, value)
    for (k, app), stacked in zip(scans.items(), outs[len(carried):]):
        env.set(op.outputs[k].name, _joined(ex.namespace(graph, app), initial[k], stacked,
                                            op.outputs[k].shape))


def _scanned_arrays(ex, op, placeholders):
    """{loop value index: its append op} for the tensor arrays the body only
    appends to (one `array_append` per trip, outside any branch, and nothing
    else reading the array in the loop): ONNX scan outputs, which the Loop
    stacks itself, instead of a carried tensor copied into a longer one on
    every trip."""
    a = op.attrs
    body = ex.blocks[a["body_block"]]
    read = _names_read(ex.blocks, [a["cond_block"], a["body_block"]])
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


def _names_read(blocks, block_ids):
    """Every read of a name by the ops of these blocks (`blocks`: index -> the
    ops exported) and the blocks nested in them (op inputs and the results
    sub-blocks hand back), with repeats."""
    names = []
    for idx in block_ids:
        for o in blocks[idx]:
            names += [v.name for v in o.inputs] + block_results(o)
            names += _names_read(blocks, sub_block_ids(o))
    return names


def _joined(ns, buf, rows, shape):
    """The array after the loop: what it held before (usually nothing) and the
    rows the loop stacked."""
    rows = rows.with_shape(shape)
    if buf.shape is not None and buf.shape[:1] == (0,):
        return rows
    return ns.concat_rows(buf, rows, shape)


register_lowering("onnx", WHILE, _lower_onnx)
register_lowering("onnx", WHILE_GRAD, NOT_EXPORTED)
