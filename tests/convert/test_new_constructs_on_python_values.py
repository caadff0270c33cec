"""The constructs this round taught the converter, given Python values: they
stay plain Python (the program holds no op for them, the values are
exactly eager's). Their tensor forms are tested beside each feature
(test_autograph_lists_indexed_by_tensors, test_autograph_list_truth,
test_autograph_augmented_pop, tests/corpus/test_paddle_numpy_and_item,
tests/jit/test_logical_select)."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def _ops(static, *args):
    static(*args)
    return [op.type for op in static.concrete_program.main_program.global_block().ops]


def _list_by_python_index(x, n):
    weights = [0.5, 1.5, -2.0]
    rows = [x * 1.0, x * 2.0]
    for i in range(2, n + 2):             # n a Python int: an unrolled loop
        rows.append(rows[i - 1] * weights[i - 2])
    return rows[n - 1]


def _truth_of_python_lists(x, n):
    outs = [i for i in range(n)]
    if outs:                              # a Python list: Python's truth
        x = x + float(len(outs))
    stack = list(outs)
    while stack:
        x = x * 1.0 + stack.pop()
    return x


def _augmented_pop(x):
    a = [1.0, 2.0, 3.0]
    s = 0.0
    s += a.pop()
    s = s + a.pop() * 2
    return x + s


class _Holder(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.scale = d2s.to_tensor(np.array([3.0], "float32"))   # not a parameter

    def forward(self, x):
        # an eager tensor's value read as Python: a real float / array
        k = self.scale.item()
        assert isinstance(k, float)
        v = self.scale.numpy()
        assert isinstance(v, np.ndarray)
        return x * k + float(v[0])


def _python_and_or(x, a, b):
    if a and b > 1:                        # Python values: Python's short circuit
        return x + 1.0
    return x - 1.0 if (a or b) else x


@pytest.mark.parametrize("fn,args,extra", [
    (_list_by_python_index, (3,), set()),
    (_truth_of_python_lists, (3,), set()),
    (_augmented_pop, (), set()),
])
def test_python_values_stay_python(fn, args, extra):
    x = d2s.to_tensor(np.array([1.0, -2.0], "float32"))
    static = to_static(fn)
    np.testing.assert_array_equal(static(x, *args).numpy(), fn(x, *args).numpy())
    ops = _ops(static, x, *args)
    assert not {"getitem", "stack", "cond", "while", "array_append", "logical_and"} & set(ops)


def test_item_and_numpy_of_an_eager_tensor_are_python_values():
    layer = _Holder()
    x = d2s.to_tensor(np.array([1.0, -2.0], "float32"))
    want = layer(x).numpy()
    d2s.jit.to_static(layer)
    np.testing.assert_array_equal(layer(x).numpy(), want)


@pytest.mark.parametrize("a,b", [(True, 2), (True, 0), (False, 3), (0, 0)])
def test_and_or_on_python_values(a, b):
    x = d2s.to_tensor(np.array([1.0], "float32"))
    static = to_static(_python_and_or)
    np.testing.assert_array_equal(static(x, a, b).numpy(), _python_and_or(x, a, b).numpy())
    assert not {"cond", "logical_and", "logical_or", "select_input"} & set(_ops(static, x, a, b))


# ---- the next round's constructs (reversed ranges, list.reverse, `in` on dicts,
# nested item targets, code after a break, loop-filled lists returned), given
# Python values. Their tensor forms: tests/corpus/test_torchstyle_reversed_range,
# test_torchstyle_list_reverse, test_torchstyle_incremental_state,
# test_torchstyle_generate_with_past, test_torchstyle_loop_lists,
# tests/convert/test_inplace_aliasing.

def _reversed_python_range(x, n):
    acc = x * 0.0
    for i in reversed(range(n)):          # n a Python int: Python's reversed
        acc = acc * 2.0 + float(i)
    return acc


def _reverse_a_python_list(x, n):
    rows = []
    for i in range(n):
        rows.append(x * float(i + 1))
    rows.reverse()                        # a Python list: list.reverse
    return rows[0] - rows[-1]


def _in_on_a_python_dict(x):
    state = {"k": 2.0}
    if "k" in state and "v" not in state:  # Python's membership
        x = x * state["k"]
    return x


def _nested_python_items(x):
    table = [[1.0, 2.0], [3.0, 4.0]]
    table[1][0] = 10.0                    # nested item targets of Python lists
    d = {"row": [0.5, 0.5]}
    d["row"][1] = 4.0
    return x * table[1][0] + d["row"][1]


def _after_a_python_break(x, n):
    y = x
    for i in range(4):
        if i == n:                        # a Python test: Python's break
            break
        y = y + 1.0
    z = y * 2.0                           # after the loop: no guarding `if`
    return z


def _python_loop_list(x, n):
    outs = []
    for i in range(n):
        outs.append(x + float(i))
    return outs                           # a Python loop's list: a list as always


@pytest.mark.parametrize("fn,args", [
    (_reversed_python_range, (3,)),
    (_reverse_a_python_list, (3,)),
    (_in_on_a_python_dict, ()),
    (_nested_python_items, ()),
    (_after_a_python_break, (2,)),
])
def test_the_next_rounds_constructs_on_python_values_stay_python(fn, args):
    x = d2s.to_tensor(np.array([1.0, -2.0], "float32"))
    static = to_static(fn)
    np.testing.assert_array_equal(static(x, *args).numpy(), fn(x, *args).numpy())
    ops = set(_ops(static, x, *args))
    assert not {"cond", "while", "set_item", "array_append", "array_read", "stack",
                "reshape_like", "select_input"} & ops, ops


def test_a_python_loops_list_is_returned_as_the_same_list():
    x = d2s.to_tensor(np.array([1.0, -2.0], "float32"))
    static = to_static(_python_loop_list)
    got, want = static(x, 3), _python_loop_list(x, 3)
    assert type(got) is list and len(got) == 3
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert not {"while", "array_append", "stack"} & set(_ops(static, x, 3))
