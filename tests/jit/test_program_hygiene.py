"""The forward program users see (print, save) is the same whatever ran before:
the backward is built on a copy, and dead ops of conversion are removed."""
import json

import numpy as np

import d2s
from d2s.jit import to_static


def loop_then_branch(x, n):
    i = d2s.zeros([], "int64")
    while i < n:          # the test is evaluated once in Python before the loop op
        x = d2s.tanh(x) * 1.5
        i = i + 1
    if x.sum() > 0:
        y = x * x
    else:
        y = -x
    return y.sum()


def _inputs(grad):
    x = d2s.to_tensor(np.array([0.3, -0.1, 0.7]), stop_gradient=not grad)
    return x, d2s.to_tensor(3)


def _eager_grad():
    d2s.jit.enable_to_static(False)
    try:
        x, n = _inputs(grad=True)
        out = to_static(loop_then_branch)(x, n)
        out.backward()
        return out.numpy(), x.grad.numpy()
    finally:
        d2s.jit.enable_to_static(True)


def _forward_call(sf):
    """The program a backward call uses, run with no gradient wanted."""
    x, n = _inputs(grad=True)
    with d2s.no_grad():
        return sf(x, n).numpy()


def _backward_call(sf):
    x, n = _inputs(grad=True)
    out = sf(x, n)
    out.backward()
    return out.numpy(), x.grad.numpy()


def _printed(sf):
    x, n = _inputs(grad=True)
    return str(sf.get_concrete_program(x, n).main_program)


def test_printed_program_does_not_depend_on_which_call_came_first():
    ref_out, ref_grad = _eager_grad()
    forward_first, backward_first = to_static(loop_then_branch), to_static(loop_then_branch)

    np.testing.assert_allclose(_forward_call(forward_first), ref_out, rtol=1e-12)
    text_before_backward = _printed(forward_first)
    out, grad = _backward_call(forward_first)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10)

    out, grad = _backward_call(backward_first)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10)
    np.testing.assert_allclose(_forward_call(backward_first), ref_out, rtol=1e-12)

    assert len(forward_first.program_cache) == len(backward_first.program_cache) == 1
    assert _printed(forward_first) == text_before_backward
    assert _printed(backward_first) == text_before_backward
    ops = backward_first.get_concrete_program(*_inputs(True)).main_program.all_ops()
    assert {"while", "cond"} <= {op.type for op in ops}
    assert not any(op.is_grad or op.type.endswith("_grad") for op in ops)
    assert not any(k.startswith("save_") for op in ops for k in op.attrs)


def test_forward_runs_after_backward_give_the_same_values_again():
    sf = to_static(loop_then_branch)
    ref_out, ref_grad = _eager_grad()
    for _ in range(2):
        out, grad = _backward_call(sf)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-10)
        np.testing.assert_allclose(_forward_call(sf), ref_out, rtol=1e-12)


def _while_ops_outside_loops(program):
    return [op.type for op in program.global_block().ops]


def test_dead_ops_of_the_first_loop_test_are_not_printed():
    sf = to_static(loop_then_branch)
    x, n = _inputs(grad=False)
    program = sf.get_concrete_program(x, n).main_program
    # Only the loop's own test compares i with n (in its cond block); the
    # comparison evaluated once to choose the loop kind is gone.
    assert "less_than" not in _while_ops_outside_loops(program)
    assert str(program).count("less_than(") == 1
    assert [op.type for op in program.all_ops()].count("less_than") == 1


def _used_names(op_json):
    names = set(op_json["inputs"]) | set(op_json["outputs"])
    for value in op_json["attrs"].values():
        if isinstance(value, str):
            names.add(value)
        elif isinstance(value, list):
            names.update(v for v in value if isinstance(v, str))
    return names


def test_saved_json_has_no_dead_ops_or_their_variables(tmp_path):
    sf = to_static(loop_then_branch)
    x, n = _inputs(grad=True)
    sf(x, n).backward()           # a backward built before saving changes nothing
    path = str(tmp_path / "model")
    d2s.jit.save(sf, path)
    doc = json.loads(open(path + ".json").read())
    op_types = [op["type"] for block in doc["blocks"] for op in block["ops"]]
    assert op_types.count("less_than") == 1
    assert not any(t.endswith("_grad") for t in op_types)
    used = set()
    for block in doc["blocks"]:
        for op in block["ops"]:
            used |= _used_names(op)
    declared = [v for block in doc["blocks"] for v in block["vars"]]
    unused = [v["name"] for v in declared if v["name"] not in used and not v["data"]
              and not v["persistable"]]
    assert unused == []
    loaded = d2s.jit.load(path)
    np.testing.assert_allclose(loaded(*_inputs(grad=False)).numpy(), _eager_grad()[0],
                               rtol=1e-12)


def test_pruning_keeps_side_effects_and_python_semantics(capsys):
    def f(x, k):
        unused = x * 100.0     # dead: dropped
        print(x)               # a side effect: kept
        if k > 0:              # Python value: plain Python branch
            return x + k
        return x - k

    sf = to_static(f)
    x = d2s.to_tensor(np.array([1.0, 2.0]))
    np.testing.assert_allclose(sf(x, 2).numpy(), [3.0, 4.0])
    np.testing.assert_allclose(sf(x, -2).numpy(), [3.0, 4.0])
    types = [op.type for op in sf.get_concrete_program(x, 2).main_program.all_ops()]
    assert "print" in types and "multiply" not in types
    static_printed = capsys.readouterr().out
    f(x, 2)
    f(x, -2)
    assert static_printed == capsys.readouterr().out  # printed on every run, as eagerly
