"""A raise under a tensor `if` (in the function or a helper it calls) inside
the caller's `try: ... except E:`: eagerly the `except` takes it, a program
could only raise it at run time, past the `except`; so it is refused while
the program is built, naming the raise and the `try` (`_jst.try_body`). A
raise no handler around would take stays a run-time error.

Each case runs eagerly and under `to_static` on the same inputs: tensor
values build the static construct, Python values keep plain Python semantics.
"""

import pytest

from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import assert_same, assert_same_run, tensor


def _checked(x):
    if x.sum() < 0:
        raise ValueError("negative input")
    return x * 2.0


def _catches_the_helpers_error(x):
    try:
        y = _checked(x)
    except ValueError:
        y = x * 0.0
    return y + 1.0


def _catches_in_a_tensor_loop(x):
    total = x * 0.0
    i = 0
    while i < x.sum():
        try:
            total = total + _checked(x - i)
        except (KeyError, ValueError):
            total = total - 1.0
        i += 1
    return total


def _catches_another_error(x):
    try:
        y = _checked(x)
    except KeyError:
        y = x * 0.0
    return y + 1.0


@pytest.mark.parametrize("fn", [_catches_the_helpers_error, _catches_in_a_tensor_loop])
@pytest.mark.parametrize("value", [2.0, -1.0])
def test_a_raise_under_a_tensor_if_the_callers_except_would_catch_is_refused(fn, value):
    # Eagerly the `except` takes the helper's error (x <= 0); the program
    # raised it when it ran, past the `except` (no word of why).
    fn(tensor([value]))
    with pytest.raises(ControlFlowError,
                       match=r"(?s)ValueError\(negative input\) is raised under an `if` on a "
                             r"tensor.*test_raise_inside_try\.py, line \d+\), inside the `try` at "
                             r".*test_raise_inside_try\.py, line \d+, whose `except` takes it.*"
                             r"raise ValueError\(\"negative input\"\)"):
        to_static(fn)(tensor([value]))


def test_a_raise_no_except_around_takes_stays_a_run_time_error():
    static = to_static(_catches_another_error)
    assert_same(static(tensor([2.0])), _catches_another_error(tensor([2.0])))
    for fn in (static, _catches_another_error):
        with pytest.raises(ValueError, match="negative input"):
            fn(tensor([-1.0]))


def _checked_gate(x, gate):
    if gate < 0:
        raise ValueError("negative gate")
    return x * 2.0


def _catches_on_a_python_gate(x, gate):
    try:
        y = _checked_gate(x, gate)
    except ValueError:
        y = x * 0.0
    return y + 1.0


@pytest.mark.parametrize("gate", [2.0, -1.0])
def test_a_helper_raising_on_a_python_condition_is_caught_as_eagerly(gate):
    static = to_static(_catches_on_a_python_gate)
    assert_same_run(static, _catches_on_a_python_gate,
                    lambda: (tensor([1.0, 2.0], grad=True), gate))
