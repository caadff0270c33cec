"""`outs.pop()` / `insert` / `remove` / `clear`, `d.pop(k)` / `update`,
`seen.add(k)` under a tensor `if` or loop, on a container made before it:
the change would show on every path, so it is the same clear error as an
append to such a list; a container made inside the trace changes freely.

Each case runs eagerly and under `to_static` on the same inputs: tensor
values build the static construct, Python values keep plain Python semantics.
"""

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import assert_same_run, program_ops, tensor


def _pop_under_tensor_if(x, gate):
    outs = [x, x * 2.0]
    if gate > 0:
        outs.pop()
    return d2s.stack(outs).sum(0) + len(outs)


def _dict_pop_under_tensor_if(x, gate):
    d = {"a": x, "b": x * 2.0}
    if gate > 0:
        d.pop("b")
    return sum(d.values())


def _dict_update_in_tensor_loop(x, gate):
    d = {"a": x}
    i = 0
    while gate > i:
        d.update(b=x * i)
        i += 1
    return sum(d.values())


def _set_add_under_tensor_if(x, gate):
    seen = set()
    if gate > 0:
        seen.add("positive")
    return x + len(seen)


_CHANGED_CASES = [(_pop_under_tensor_if, "outs", "pop", "list"),
                  (_dict_pop_under_tensor_if, "d", "pop", "dict"),
                  (_dict_update_in_tensor_loop, "d", "update", "dict"),
                  (_set_add_under_tensor_if, "seen", "add", "set")]


# A list the function made, popped under a tensor `if`, is carried as a tensor
# array now (tests/jit/test_lists_around_tensor_loops.py): no error; so is one
# given an item in front (tests/corpus/test_research_returns_insert_front.py).
@pytest.mark.parametrize("fn, name, method, kind", _CHANGED_CASES[1:])
def test_a_container_changed_in_place_under_a_tensor_construct_is_an_error(fn, name, method,
                                                                          kind):
    x = tensor([1.0, 2.0])
    with pytest.raises(ControlFlowError,
                       match=rf"(?s)'{name}\.{method}\(\.\.\.\)' inside an `if` or a loop on "
                             rf"a tensor \(.*test_containers_changed_in_place\.py, line \d+\).*the {kind} "
                             rf"'{name}'"):
        to_static(fn)(x, x.sum() - 4.0)


@pytest.mark.parametrize("fn", [case[0] for case in _CHANGED_CASES])
@pytest.mark.parametrize("gate", [2.0, -1.0])
def test_a_container_changed_in_place_under_a_python_construct_keeps_python_semantics(
        fn, gate):
    static = to_static(fn)
    assert_same_run(static, fn, lambda: (tensor([1.0, 2.0], grad=True), gate))


def _popped_in_each_trip(x, n):
    i = d2s.zeros([], "int64")
    while i < n:
        parts = [x, x * 2.0, x * 3.0]      # this trip's own list
        parts.pop(0)
        parts.insert(0, x * 0.5)
        x = d2s.stack(parts).sum(0) / 4.0
        i = i + 1
    return x


def test_a_container_made_inside_the_trip_may_change_in_place():
    static = to_static(_popped_in_each_trip)
    assert_same_run(static, _popped_in_each_trip,
                    lambda: (tensor([1.0, 2.0], grad=True), tensor(3, dtype=np.int64)))
    assert "while" in program_ops(static, tensor([1.0, 2.0]), tensor(3, dtype=np.int64))
