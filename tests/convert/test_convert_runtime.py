"""Python paths of the runtime helpers and the convertibility rules."""
import functools
import json
import os

import numpy as np
import pytest

from d2s.convert import convert_function, is_convertible
from d2s.convert import runtime as jst


def user_fn(x):
    return x + 1


def test_is_convertible_rules():
    assert is_convertible(user_fn)
    assert not is_convertible(len)                 # builtin
    assert not is_convertible(json.dumps)          # stdlib
    assert not is_convertible(np.mean)             # numpy (site-packages)
    assert not is_convertible(jst.convert_ifelse)  # d2s itself
    assert not is_convertible(convert_function(user_fn)[0])  # already converted
    marked = functools.wraps(user_fn)(lambda x: x)
    marked._d2s_not_to_static = True
    assert not is_convertible(marked)


def test_convert_call_passthrough_and_conversion():
    assert jst.convert_call(len) is len
    assert jst.convert_call(os.path.join) is os.path.join
    assert jst.convert_call(user_fn) is convert_function(user_fn)[0]
    bound = jst.convert_call([].append)
    assert bound.__name__ == "append"
    p = jst.convert_call(functools.partial(user_fn, 1))
    assert p() == 2 and p.func is convert_function(user_fn)[0]

    def gen():
        yield 1
    assert jst.convert_call(gen) is gen


def test_logical_helpers_python_semantics():
    calls = []
    rhs = lambda: calls.append(1) or "r"  # noqa: E731
    assert jst.convert_logical_and(0, rhs) == 0 and calls == []
    assert jst.convert_logical_or("l", rhs) == "l" and calls == []
    assert jst.convert_logical_and(1, rhs) == "r" and calls == [1]
    assert jst.convert_logical_not([]) is True
    assert jst.convert_compare_chain(1, "<", lambda: 2, "<", lambda: 0) is False


def test_loop_helpers_python_semantics():
    state = {"i": 0}
    jst.convert_while_loop(lambda: state["i"] < 3, lambda: state.update(i=state["i"] + 1),
                           lambda: (), lambda v: None, (), ())
    assert state["i"] == 3
    seen = []
    it = iter(range(10))
    jst.convert_for(it, seen.append, lambda: (), lambda v: None, (), (),
                    cond_fn=lambda: len(seen) < 3)
    assert seen == [0, 1, 2] and next(it) == 3  # no item consumed after the stop


def test_undefined_var_errors():
    u = jst.UndefinedVar("x")
    with pytest.raises(UnboundLocalError, match="'x'"):
        jst.ld(u)
    with pytest.raises(NameError, match="'x'"):
        u + 1
    assert jst.return_value(u) is None and jst.return_value(0) == 0
    assert jst.convert_range(3) == range(3)


def test_assert_message_lazy():
    jst.convert_assert(True, lambda: 1 / 0)
    with pytest.raises(AssertionError, match="boom"):
        jst.convert_assert(False, lambda: "boom")
