"""Model code the previous hunt left with silent wrong answers (each found by
running eager and `to_static` side by side on the same inputs):

- a list reached through an attribute or a dict (`self.cache.append(h)`,
  `d["k"].append(x)`) under a tensor `if` or loop: the append showed on
  every path. A list living in an object may outlive the call, where a
  program value cannot go: a clear error naming it and the user's line;
- `b = a` and an append to `a` under a tensor `if` / loop: `b` saw the
  appends on every path (or none): a clear error naming both names;
- `print(param)` of an eager Tensor in converted code printed once, while
  tracing; it now prints on every call, the tensor's value at that call;
- `d2s.where` / `clip` / `full_like` / `maximum` / `minimum` with Python
  numbers: the same dtype eagerly and in the program (a table).
"""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import assert_same, assert_same_run, program_ops, tensor


# ---- lists reached through an attribute or a dict ----------------------------

class _Decoder:
    def __init__(self):
        self.cache = []


def _cache_under_tensor_if(x, decoder):
    h = x * 2.0
    if x.sum() > 0:
        decoder.cache.append(h)
    return x + 1.0


def _dict_list_under_tensor_loop(x, state):
    h = x * 2.0
    while x.sum() < 4.0:
        state["seen"].append(h)
        x = x + 1.0
    return x


def _cache_under_python_if(x, decoder, keep):
    h = x * 2.0
    if keep:
        decoder.cache.extend([h])
    return x + 1.0


@pytest.mark.parametrize("value", [1.0, -1.0])
def test_attribute_list_append_under_a_tensor_if_is_an_error_naming_it(value):
    # eagerly the append happens only when x.sum() > 0; the program traced
    # both branches and the append showed on both (len 1 for value -1.0)
    decoder = _Decoder()
    with pytest.raises(ControlFlowError,
                       match=r"(?s)'decoder\.cache\.append\(\.\.\.\)' inside an `if` or a loop "
                             r"on a tensor.*test_model_code_more\.py.*line \d+.*decoder\.cache"
                             r"\.append\(h\)"):
        to_static(_cache_under_tensor_if)(tensor([value]), decoder)
    assert decoder.cache == []  # never changed in place


def test_dict_list_append_under_a_tensor_loop_is_an_error_naming_it():
    state = {"seen": []}
    with pytest.raises(ControlFlowError,
                       match=r"(?s)'state\['seen'\]\.append\(\.\.\.\)'.*"
                             r"test_model_code_more\.py"):
        to_static(_dict_list_under_tensor_loop)(tensor([1.0]), state)
    assert state["seen"] == []
    eager = {"seen": []}
    _dict_list_under_tensor_loop(tensor([1.0]), eager)
    assert len(eager["seen"]) == 3  # what the program could not have shown


@pytest.mark.parametrize("keep", [True, False])
def test_attribute_list_extend_under_a_python_if_stays_python(keep):
    static_decoder, eager_decoder = _Decoder(), _Decoder()
    static = to_static(_cache_under_python_if)(tensor([1.0]), static_decoder, keep)
    eager = _cache_under_python_if(tensor([1.0]), eager_decoder, keep)
    assert_same(static, eager)
    assert len(static_decoder.cache) == len(eager_decoder.cache) == (1 if keep else 0)


# ---- a list bound to two names -----------------------------------------------

def _alias_then_tensor_if(x):
    outs = []
    seen = outs
    h = x * 2.0
    if x.sum() > 0:
        outs.append(h)
    return len(seen)


def _alias_then_tensor_loop(x):
    steps = [x]
    history = steps
    while x.sum() < 3.0:
        x = x + 1.0
        steps.append(x)
    return len(history)


def _no_alias_tensor_if(x):
    outs = [x]
    h = x * 2.0
    if x.sum() > 0:
        outs.append(h)
    return d2s.stack(outs)


@pytest.mark.parametrize("fn, construct", [(_alias_then_tensor_if, "an `if` on a tensor"),
                                           (_alias_then_tensor_loop, "a loop on a tensor")])
@pytest.mark.parametrize("value", [1.0, -1.0])
def test_append_to_a_list_another_name_holds_is_an_error_naming_both(fn, construct, value):
    # before: len(seen) was the same on both paths (eager: 1 or 0), len(history) 1
    with pytest.raises(ControlFlowError, match=rf"(?s)the list '(outs|steps)' is appended to in "
                                               rf"{construct}.*test_model_code_more\.py.*"
                                               rf"'(seen|history)' names the same list"):
        to_static(fn)(tensor([value]))


@pytest.mark.parametrize("value", [1.0, -1.0])
def test_append_under_a_tensor_if_without_an_alias_is_still_an_array(value):
    # (the rule above does not catch the plain case lists.sharing makes right)
    static = assert_same_run(to_static(_no_alias_tensor_if), _no_alias_tensor_if,
                             lambda: (tensor([value]),))
    assert static.shape[0] == (2 if value > 0 else 1)
    assert "cond" in program_ops(to_static(_no_alias_tensor_if), tensor([value]))


# ---- print of an eager Tensor ------------------------------------------------

class _Scaled(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.scale = self.create_parameter([2])

    def forward(self, x):
        print("scale:", self.scale)
        return x * self.scale


def test_print_of_a_parameter_prints_on_every_call_with_its_value_then(capsys):
    layer = _Scaled()
    static = to_static(layer.forward)
    expected = []
    for step in range(3):
        # as an optimizer's update does: the parameter's array replaced
        layer.scale._value = np.array([step, step + 0.5], np.float32)
        layer.forward(tensor([1.0, 1.0]))
        expected.append(capsys.readouterr().out)
        static(tensor([1.0, 1.0]))
        got = capsys.readouterr().out
        assert got == expected[-1], f"call {step}: {got!r} vs eager {expected[-1]!r}"
    assert len(set(expected)) == 3  # the value printed is the one at that call
    assert "print" in program_ops(static, tensor([1.0, 1.0]))


_CAPTURED = d2s.to_tensor(np.array([3.0, 4.0], np.float32))


def _prints_a_captured_tensor_and_a_variable(x):
    print(_CAPTURED, x + 1.0, sep=" | ")
    return x * 2.0


def test_print_of_a_captured_tensor_next_to_a_variable(capsys):
    static = to_static(_prints_a_captured_tensor_and_a_variable)
    for _ in range(2):
        _prints_a_captured_tensor_and_a_variable(tensor([1.0]))
        eager = capsys.readouterr().out
        static(tensor([1.0]))
        assert capsys.readouterr().out == eager


# ---- Python numbers next to Python numbers: the same dtype in both modes -----

_NUMBER_OPS = {
    "where(c, 0.5, 1.0)": lambda x: d2s.where(x > 0, 0.5, 1.0),
    "where(c, 1, 0)": lambda x: d2s.where(x > 0, 1, 0),
    "where(c, 1, 0.5)": lambda x: d2s.where(x > 0, 1, 0.5),
    "where(c, x, 0.5)": lambda x: d2s.where(x > 0, x, 0.5),
    "x * where(c, 0.5, 1.0)": lambda x: x * d2s.where(x > 0, 0.5, 1.0),
    "where(c, 0.5, 1.0) * 2.0": lambda x: d2s.where(x > 0, 0.5, 1.0) * 2.0,
    "where(c, 1, 0) + 0.5": lambda x: d2s.where(x > 0, 1, 0) + 0.5,
    "clip(x, 0.5, 1.0)": lambda x: d2s.clip(x, 0.5, 1.0),
    "full_like(x, 2.5)": lambda x: d2s.full_like(x, 2.5),
    "maximum(x, 0.5)": lambda x: d2s.maximum(x, 0.5),
    "minimum(x, 1)": lambda x: d2s.minimum(x, 1),
}


def _number_op_in_a_step(op, x):
    return op(x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("name", sorted(_NUMBER_OPS))
def test_python_number_operands_give_the_eager_dtype(name, dtype):
    op = _NUMBER_OPS[name]
    x = tensor([2, -1, 0], dtype=dtype)
    eager = op(x)
    static = to_static(_number_op_in_a_step)(op, x)
    assert_same(static, eager, what=f"{name} on {dtype}")
