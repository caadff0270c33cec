"""Control flow in ONNX: `cond` -> If, `while` -> Loop, tensor arrays,
undefined names; each checked against eager on inputs that take every path,
and with Python values (plain Python: no If / Loop is built)."""
from __future__ import annotations

import numpy as np
import pytest

from onnx_helpers import assert_same, run_model

import d2s
import d2s.onnx.exporter
from d2s.jit import InputSpec, to_static
from d2s.onnx.exporter import export_program
from d2s.static.pytree import flatten


def _export(fn, specs):
    return d2s.onnx.to_model(fn, input_spec=specs)


def _graphs(graph):
    """The graph and every graph nested in it (If branches, Loop bodies)."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.g.node:
                yield from _graphs(attr.g)


def _op_types(model):
    return [n.op_type for g in _graphs(model.graph) for n in g.node]


def _check(fn, specs, *cases):
    """Export `fn`, then run every case (tuples of arrays) in ONNX Runtime
    and eagerly: same dtypes, shapes and values."""
    model = _export(fn, specs)
    # the program's outputs: where its result structure holds no Python constant
    outputs = fn.get_concrete_program(*specs).output_structure.positions
    for arrays in cases:
        got = run_model(model, list(arrays))
        eager = flatten(fn.dygraph_function(*[d2s.to_tensor(a) for a in arrays]))[0]
        want = [eager[i] for i in outputs]
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{fn.__name__}{[a.tolist() for a in arrays]} output {k}")
    return model


def _names_are_ssa(model):
    defined = []
    for g in _graphs(model.graph):
        defined += [i.name for i in g.input] + [o for n in g.node for o in n.output]
        defined += [t.name for t in g.initializer]
    assert len(defined) == len(set(defined)), "a name is defined twice across nested graphs"


# ---- cond -> If ---------------------------------------------------------------------
@to_static
def branchy(x):
    if x.sum() > 0:
        y = x * 2
        z = y.sum()
    else:
        y = -x
        z = x.max()
    return y, z


def test_tensor_if_becomes_if_and_takes_both_paths():
    model = _check(branchy, [InputSpec([None])], (np.arange(3.0, dtype=np.float32),),
                   (-np.arange(1.0, 4.0, dtype=np.float32),))
    assert _op_types(model).count("If") == 1


@to_static
def scaled(x, double):
    if double:  # a Python bool: plain Python, no If
        return x * 2
    return x


def test_python_if_stays_python():
    for flag in (True, False):
        model = d2s.onnx.to_model(scaled, input_spec=[InputSpec([3]), flag])
        assert "If" not in _op_types(model)
        x = np.ones(3, np.float32)
        assert_same(run_model(model, [x])[0], x * 2 if flag else x, f"flag {flag}")


@to_static
def early_return(x):
    if x.mean() > 0:
        return x * 10
    y = x - 1
    return y


def test_return_inside_a_tensor_if():
    model = _check(early_return, [InputSpec([2], "float64")], (np.array([1.0, 2.0]),),
                   (np.array([-1.0, -2.0]),))
    assert "If" in _op_types(model)


# ---- while -> Loop --------------------------------------------------------------------
@to_static
def collatz(n):
    steps = d2s.zeros([], "int64")
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps = steps + 1
    return steps, n


def test_tensor_while_becomes_loop_with_its_first_test_outside():
    model = _check(collatz, [InputSpec([], "int64")], (np.array(27),), (np.array(6),),
                   (np.array(1),))  # 1: zero trips, the first test is false
    loops = [n for n in model.graph.node if n.op_type == "Loop"]
    assert len(loops) == 1 and loops[0].input[0] == ""  # no trip count: a while
    first_test = loops[0].input[1]
    assert any(first_test in n.output for n in model.graph.node)  # computed before the loop
    _names_are_ssa(model)


@to_static
def nested(x, n):
    total = d2s.zeros([], "float32")
    i = d2s.zeros([], "int64")
    while i < n:
        j = d2s.zeros([], "int64")
        while j < i:
            if (i + j) % 3 == 0:
                total = total + x[j]
            else:
                total = total - 0.5
            j = j + 1
        i = i + 1
    return total


def test_nested_loops_and_branches_keep_names_unique():
    x = np.arange(6, dtype=np.float32)
    model = _check(nested, [InputSpec([6]), InputSpec([], "int64")], (x, np.array(5)),
                   (x, np.array(0)))
    assert _op_types(model).count("Loop") == 2
    _names_are_ssa(model)


@to_static
def loop_in_branch(x):
    if x.sum() > 0:
        while x.sum() < 100:
            x = x * 2
    else:
        x = x - 1
    return x


def test_a_loop_inside_a_branch():
    _check(loop_in_branch, [InputSpec([None])], (np.array([1.0, 2.0], np.float32),),
           (np.array([-1.0], np.float32),))


@to_static
def range_break_continue(x, n):
    acc = d2s.zeros([], "float32")
    for i in range(n):
        if i % 2 == 1:
            continue
        if acc > 10:
            break
        acc = acc + x[i]
    return acc


def test_for_range_with_break_and_continue():
    x = np.arange(1.0, 9.0, dtype=np.float32)
    model = _check(range_break_continue, [InputSpec([8]), InputSpec([], "int64")],
                   (x, np.array(8)), (x, np.array(3)), (x, np.array(0)))
    assert "Loop" in _op_types(model)


@to_static
def first_assigned_in_loop(x):
    for row in x:  # `last` is first assigned in the loop, read after it
        last = row * 2
    return last


def test_a_name_first_assigned_in_a_loop():
    model = _check(first_assigned_in_loop, [InputSpec([None, 2])],
                   (np.arange(6.0, dtype=np.float32).reshape(3, 2),))
    assert "Loop" in _op_types(model)


@to_static
def number_returned_from_a_loop(x, n):
    for i in range(n):
        if x.sum() < 0:
            return x * 2, 1  # a weak int64, promoted to float32 by the returns below
    if x.sum() > 0:
        return x * 3, x.sum()
    return x * 4, x.mean()


def test_a_number_a_loop_may_return_is_cast_only_where_defined():
    model = _export(number_returned_from_a_loop, [InputSpec([2]), InputSpec([], "int64")])
    assert {"Loop", "If", "Cast"} <= set(_op_types(model))
    for xv in ([1.0, -1.0], [1.0, 2.0], [-1.0, -2.0]):
        for n in (0, 2):
            x = np.array(xv, np.float32)
            got = run_model(model, [x, np.array(n)])
            want = number_returned_from_a_loop.dygraph_function(d2s.to_tensor(x), n)
            assert_same(got[0], want[0], f"x={xv}, n={n}")
            assert got[1].dtype == np.float32 and float(got[1]) == float(want[1])


def test_a_loop_value_the_body_hands_back_unchanged():
    prog = d2s.static.Program()
    with d2s.static.program_guard(prog):
        n = d2s.static.data("n", [], "int64")
        x = d2s.static.data("x", [3], "float32")
        i, same, total = d2s.static.nn.while_loop(
            lambda i, same, total: i < n,
            lambda i, same, total: (i + 1, same, total + same),
            [d2s.zeros([], "int64"), x, d2s.zeros([3])])
    model = export_program(prog, prog.global_block().ops, [n, x], [i, same, total])
    x_np = np.array([1.0, 2.0, 3.0], np.float32)
    got = run_model(model, [np.array(4), x_np])
    assert [g.tolist() for g in got] == [4, x_np.tolist(), (4 * x_np).tolist()]


# ---- tensor arrays -------------------------------------------------------------------------
@to_static
def running_sums(x):
    outs = []
    total = d2s.zeros([3])
    for t in range(len(x)):
        total = total + x[t]
        outs.append(total * 1.0)
    return d2s.stack(outs), len(outs)


def _loops(model):
    return [n for g in _graphs(model.graph) for n in g.node if n.op_type == "Loop"]


def test_a_list_appended_to_in_a_loop_is_a_scan_output():
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    model = _check(running_sums, [InputSpec([None, 3])], (x,), (x[:1],))
    (loop,) = _loops(model)
    assert len(loop.output) == len(loop.input) - 2 + 1  # the carried values and one scan
    assert "Concat" not in _op_types(model)  # the Loop stacks the rows itself


@to_static
def starts_with_a_row(x, n):
    rows = [x[0]]
    i = d2s.zeros([], "int64")
    while i < n:
        rows.append(x[i] * 2)
        i = i + 1
    return d2s.stack(rows)


def test_a_scanned_list_keeps_the_rows_it_had():
    x = np.arange(8.0).reshape(4, 2)
    model = _check(starts_with_a_row, [InputSpec([4, 2], "float64"), InputSpec([], "int64")],
                   (x, np.array(3)), (x, np.array(0)))
    (loop,) = _loops(model)
    assert len(loop.output) == len(loop.input) - 2 + 1


@to_static
def reads_its_list(x):
    outs = [x[0]]
    for t in range(1, len(x)):
        outs.append(outs[-1] + x[t])  # the list is read in the loop: carried, not scanned
    return d2s.stack(outs)


@to_static
def appends_in_a_branch(x):
    outs = [x[0] * 0]
    for t in range(len(x)):
        if x[t].sum() > 0:
            outs.append(x[t])
    return d2s.stack(outs)


def test_lists_read_or_appended_conditionally_are_carried_tensors():
    x = np.array([[1.0, 2.0], [-3.0, 1.0], [4.0, -5.0], [0.5, 0.5]], np.float32)
    for fn in (reads_its_list, appends_in_a_branch):
        model = _check(fn, [InputSpec([None, 2])], (x,), (x[:1],))
        (loop,) = _loops(model)
        assert len(loop.output) == len(loop.input) - 2  # no scan output
        assert "Concat" in _op_types(model)


@to_static
def ragged_rows(x, n):
    rows = []
    i = d2s.zeros([], "int64")
    while i < n:
        rows.append(x[i] * i)
        i = i + 1
    return d2s.stack(rows)


def test_an_empty_list_whose_elements_have_unknown_dims():
    x = np.arange(10.0).reshape(2, 5)
    _check(ragged_rows, [InputSpec([2, None], "float64"), InputSpec([], "int64")],
           (x, np.array(2)), (x[:, :3], np.array(1)))


# ---- the example RNN: a loop over a run-time length ------------------------------------------
class SequenceRNN(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.w_in = d2s.nn.Linear(4, 6)
        self.w_h = d2s.nn.Linear(6, 6, bias_attr=False)

    @to_static(input_spec=[InputSpec([None, 4], "float32")])
    def forward(self, x):
        h = d2s.zeros([1, 6])
        for t in range(len(x)):
            h = d2s.tanh(self.w_in(x[t:t + 1]) + self.w_h(h))
        return h


@pytest.mark.parametrize("length", [1, 5, 12])
def test_rnn_over_a_run_time_length(length):
    d2s.seed(0)
    rnn = SequenceRNN()
    model = d2s.onnx.to_model(rnn)
    x = np.random.default_rng(length).standard_normal((length, 4)).astype(np.float32)
    assert_same(run_model(model, [x])[0], rnn(d2s.to_tensor(x)), f"length {length}")


@pytest.mark.parametrize("opset", range(18, d2s.onnx.exporter.DEFAULT_OPSET + 1))
def test_control_flow_at_every_supported_opset(opset):
    d2s.seed(0)
    rnn = SequenceRNN()
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    model = d2s.onnx.to_model(rnn, opset_version=opset)
    assert model.opset_import[0].version == opset
    assert_same(run_model(model, [x])[0], rnn(d2s.to_tensor(x)), f"rnn at opset {opset}")
    model = d2s.onnx.to_model(collatz, [InputSpec([], "int64")], opset_version=opset)
    got = run_model(model, [np.array(27)])
    assert [int(v) for v in got] == [111, 1]
