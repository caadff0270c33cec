"""The truth of a tensor in converted code.

`if t:` / `while t:` / `a or b` / `x if t else y` / `assert t` with a tensor
`t` of many (or no) elements raise `bool()`'s ValueError at the user's line
before the construct is traced, as eagerly (an `except ValueError` takes
it); one element still builds the construct. A comprehension whose `if`
tests a tensor is a `ControlFlowError` naming its line and what to write.

Each case runs eagerly and under `to_static` on the same inputs: tensor
values build the static construct, Python values keep plain Python semantics.
"""

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import assert_same_run, program_ops, tensor


def _if_many(x):
    if x > 0:
        return x
    return -x


def _while_many(x):
    while x > 0:
        x = x - 1.0
    return x


def _or_many(x, z):
    return z or x


def _ternary_many(x):
    return x if x > 0 else -x


def _assert_many(x):
    assert x > 0, "not positive"
    return x


def _if_many_caught(x):
    try:
        if x > 0:
            y = x
        else:
            y = -x
    except ValueError:
        y = x * 10.0
    return y


@pytest.mark.parametrize("fn", [_if_many, _while_many, _ternary_many, _assert_many])
@pytest.mark.parametrize("value", [[1.0, 2.0], [1.0, -2.0], []])
def test_the_truth_of_a_tensor_of_many_elements_raises_bools_value_error(fn, value):
    x = tensor(np.float32(value))
    with pytest.raises(ValueError, match=r"bool\(\) of a Tensor with \d elements is ambiguous"):
        fn(x)
    with pytest.raises(ValueError, match=r"(?s)bool\(\) of a Tensor with \d elements is "
                                         r"ambiguous.*test_truth_of_tensors\.py\", line \d+"):
        to_static(fn)(x)


def test_the_truth_of_many_elements_in_an_or_raises_bools_value_error():
    x = tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="ambiguous"):
        _or_many(x, x)
    with pytest.raises(ValueError, match="ambiguous"):
        to_static(_or_many)(x, x)


def test_an_except_value_error_takes_the_truth_error_as_eagerly():
    assert_same_run(to_static(_if_many_caught), _if_many_caught,
                    lambda: (tensor([1.0, -2.0], grad=True),))


@pytest.mark.parametrize("fn", [_if_many, _while_many, _ternary_many])
def test_the_truth_of_a_one_element_tensor_still_builds_the_construct(fn):
    static = to_static(fn)
    assert_same_run(static, fn, lambda: (tensor([2.5], grad=True),))
    assert program_ops(static, tensor([2.5])) & {"cond", "while"}


def _kept_rows(x):
    kept = [row * 2.0 for row in [x, -x, x + 1.0] if row.sum() > 0]
    return d2s.stack(kept)


def _kept_by_key(x):
    return {k: v for k, v in (("a", x), ("b", -x)) if v.sum() > 0}


def _kept_sum(x):
    return sum(v for v in [x, -x] if v.sum() > 0)


@pytest.mark.parametrize("fn", [_kept_rows, _kept_by_key, _kept_sum])
def test_a_comprehension_filtering_on_a_tensor_is_an_error_naming_its_line(fn):
    fn(tensor([1.0, 2.0]))   # eagerly fine
    with pytest.raises(ControlFlowError, match=r"(?s)a comprehension's `if` tests a tensor "
                                               r"\(.*test_truth_of_tensors\.py, line \d+\).*"
                                               r"`for` loop"):
        to_static(fn)(tensor([1.0, 2.0]))


def _kept_python(x, keep):
    kept = [v * k for k, v in enumerate([x, x * 2.0, x * 3.0]) if k in keep]
    return d2s.stack(kept)


def test_a_comprehension_filtering_on_python_values_keeps_python_semantics():
    static = to_static(_kept_python)
    assert_same_run(static, _kept_python, lambda: (tensor([1.0, 2.0], grad=True), (0, 2)))
