"""Errors, `try`/`except` and constructs d2s does not support, in model code:
each either behaves as eagerly or is a clear error naming the user's file
and line, never a silent wrong answer.

Found by this file: a `raise` under a tensor `if` inside `try ... except`
was caught while the program was built (both branches are traced), so the
handler's result was returned for every input (a silent wrong answer for
inputs that take the other branch). The `except` now refuses an error
raised while tracing a tensor `if` or loop, naming both lines.

Likewise an `except TypeError` took the build-time error of a tensor used
as a Python index (`scales[i]`) and returned its fallback for every input.

Also: `except KeyError as e:` inside a tensor `if` or loop crashed with
"NameError: cannot access free variable 'e'" (the branch closure read the
name back as state after Python had unbound it at the handler's end).
"""
import math

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import assert_same_run, tensor

V = np.array([0.5, -1.5, 2.0], np.float32)


def _raise_in_tensor_if_in_try(x):
    try:
        if x.sum() > 0:
            raise ValueError("positive")
        y = x * 2
    except ValueError:
        y = -x
    return y


def _raise_in_tensor_loop_in_try(x, n):
    try:
        for _ in range(n):
            x = x * 2
            if x.max() > 100:
                raise OverflowError("too big")
    except OverflowError:
        x = x * 0
    return x


@pytest.mark.parametrize("fn, args, construct", [
    (_raise_in_tensor_if_in_try, (V,), "a branch of an `if` on a tensor"),
    (_raise_in_tensor_loop_in_try, (V, 3),
     r"a branch of an `if` on a tensor \(.*test_model_code_errors.py, line \d+\)"),
])
def test_an_except_never_catches_an_error_raised_while_tracing_a_tensor_path(fn, args, construct):
    static = to_static(fn)
    with pytest.raises(ControlFlowError, match=construct) as info:
        static(*(tensor(a) for a in args))
    text = str(info.value)
    assert "test_model_code_errors.py" in text and "except" in text
    assert len(static.program_cache) == 0, "a failed build is not cached"


def _raise_in_if_in_try(x):
    try:
        if x > 0:
            raise ValueError("positive")
        y = x * 2
    except ValueError as err:
        y = -x if str(err) == "positive" else None
    return y


def test_python_values_keep_python_semantics():
    static = to_static(_raise_in_if_in_try)
    assert static(2.0) == _raise_in_if_in_try(2.0) == -2.0
    assert static(-2.0) == _raise_in_if_in_try(-2.0) == -4.0


def _lookup(x, table):
    try:
        scale = table["scale"]
    except KeyError as missing:
        scale = len(str(missing))
    if x.sum() > 0:
        try:
            y = x / scale
        except ZeroDivisionError:
            y = x
    else:
        y = x * scale
    return y


@pytest.mark.parametrize("table", [{}, {"scale": 4.0}])
def test_try_on_python_values_inside_converted_code_is_python(table):
    for sign in (1.0, -1.0):
        assert_same_run(to_static(_lookup), _lookup,
                        lambda: (tensor(V * sign, grad=True), dict(table)))


def _build_error_in_one_branch(x):
    try:
        if x.sum() > 0:
            y = x.reshape([7])   # wrong shape: fails when traced
        else:
            y = x
    except ValueError:
        y = x * 0
    return y


def test_a_build_error_of_one_branch_caught_by_an_except_is_a_clear_error():
    with pytest.raises(ControlFlowError, match="was raised while tracing a branch"):
        to_static(_build_error_in_one_branch)(tensor(V))


def _bare_except(x):
    try:
        if x.sum() > 0:
            raise RuntimeError("no")
        y = x
    except:  # noqa: E722 - the handler gets a made-up name for the check
        y = -x
    return y


def test_a_bare_except_is_checked_too():
    with pytest.raises(ControlFlowError, match="RuntimeError: no"):
        to_static(_bare_except)(tensor(V))


def _bare_except_python(x):
    try:
        if x > 0:
            raise RuntimeError("no")
        y = x
    except:  # noqa: E722
        y = -x
    return y


def test_a_bare_except_keeps_python_semantics():
    static = to_static(_bare_except_python)
    assert static(1.0) == _bare_except_python(1.0) == -1.0
    assert static(-3.0) == _bare_except_python(-3.0) == -3.0


# `float(t)` / `int(t)` / `t.item()` / `t.numpy()` feeding tensor code are
# casts now (issue 25): tests/jit/test_casts_in_converted_code.py and
# tests/corpus/test_paddle_numpy_and_item.py.


def _signs(x):
    if x.sum() > 0:    # a generator is not converted
        yield x
    else:
        yield -x


def _from_a_generator(x):
    return next(_signs(x))


@pytest.mark.parametrize("fn, what", [
    (_from_a_generator, "generators"),
])
def test_a_python_number_from_a_tensor_is_a_clear_error(fn, what):
    fn(tensor(V))   # eagerly fine
    with pytest.raises(TypeError, match=what) as info:
        to_static(fn)(tensor(V))
    assert "test_model_code_errors.py" in str(info.value)


def _handler_in_tensor_branch(x, table):
    if x.sum() > 0:
        try:
            k = table["k"]
        except KeyError as missing:
            k = float(len(str(missing)))
        y = x * k
    else:
        try:
            y = x / table["d"]
        except KeyError:
            y = x
    return y


def _handler_in_tensor_loop(x, n, table):
    for i in range(n):
        try:
            x = x * table["w"]
        except (KeyError, IndexError) as err:
            x = x + len(type(err).__name__)
    return x


@pytest.mark.parametrize("table", [{}, {"k": 3.0, "d": 2.0}])
def test_try_except_inside_a_tensor_branch_or_loop(table):
    static = to_static(_handler_in_tensor_branch)
    for sign in (1.0, -1.0):
        assert_same_run(static, _handler_in_tensor_branch,
                        lambda: (tensor(V * sign, grad=True), dict(table)))
    loop = to_static(_handler_in_tensor_loop)
    for weights in ({}, {"w": 2.0}):
        assert_same_run(loop, _handler_in_tensor_loop,
                        lambda: (tensor(V, grad=True), tensor(3), weights))


def _pick_or_default(x, i):
    scales = [1.0, 2.0, 3.0]
    try:
        s = scales[:i + 1][-1]   # eagerly a tensor bound works
    except TypeError:
        s = 0.0
    return x * s


def test_an_except_never_takes_the_error_of_a_variable_asked_for_a_python_value():
    """Found here: the `except TypeError` took the build-time error of
    `scales[:i + 1]` (i a tensor) and returned x * 0 for every input.
    (`scales[i]` picks the item at run time now:
    tests/convert/test_autograph_lists_indexed_by_tensors.py.)"""
    assert _pick_or_default(tensor(V), tensor(1)).numpy().tolist() == (V * 2).tolist()
    with pytest.raises(ControlFlowError, match=r"(?s)caught TypeError.*asked for a Python value") \
            as info:
        to_static(_pick_or_default)(tensor(V), tensor(1))
    assert "test_model_code_errors.py" in str(info.value)


def _scale_or_default(x):
    try:
        t = math.exp(x.max())   # eagerly a Python float (library code calls float())
    except TypeError:
        t = 0.0
    return x * t


def test_an_except_never_takes_the_error_of_float_of_a_variable():
    """float() of a Variable (here inside math.exp, which d2s does not
    convert) is a build error as an index is: the `except TypeError` would
    otherwise return x * 0 for every input."""
    assert np.allclose(_scale_or_default(tensor(V)).numpy(), V * np.exp(V.max()))
    with pytest.raises(ControlFlowError, match=r"(?s)caught TypeError.*float\(\) of static"):
        to_static(_scale_or_default)(tensor(V))
