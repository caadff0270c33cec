"""Errors of converted code that the user's line explains also say what to
write instead: a numpy function given a traced tensor names the d2s op; a
name whose rank or shape differs between the paths of a tensor `if` says to
give both paths one shape."""
from __future__ import annotations

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static.control_flow import ControlFlowError


def numpy_tanh(x):
    return np.tanh(x) + 1.0


def numpy_exp_of_sum(x):
    return np.exp(x.sum())


def ranks_differ(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = x.sum()
    return y


def shapes_differ(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = d2s.zeros([5])
    return y


def while_on_many(x):
    while x > 0:
        x = x - 1.0
    return x


@pytest.mark.parametrize("fn, error, hint", [
    (while_on_many, ValueError, r"ambiguous.*needs one element: reduce it, e\.g\. \(x > 0\)\.all"),
    (numpy_tanh, TypeError, r"use d2s\.tanh\(\.\.\.\) instead of np\.tanh\(\.\.\.\)"),
    (numpy_exp_of_sum, TypeError, r"use d2s\.exp\(\.\.\.\) instead of np\.exp\(\.\.\.\)"),
    (ranks_differ, ControlFlowError,
     r"'y' has rank 1 and 0 in the two branches; .*make both give the same shape"),
    (shapes_differ, ControlFlowError,
     r"'y' has shape \[3\] and \[5\] .*\(dim 0 differs\); .*make both give the same shape"),
])
def test_the_message_says_what_to_write(fn, error, hint):
    with pytest.raises(error, match=hint) as info:
        to_static(fn)(d2s.to_tensor(np.ones(3, "float32")))
    assert f"in {fn.__name__}" in str(info.value)   # and still names the user's line


def rank_grows_in_loop(x):
    i = d2s.zeros([], "int64")
    while i < 3:
        x = d2s.stack([x, x])
        i = i + 1
    return x


def test_a_loop_variable_changing_rank_says_how_to_keep_it():
    with pytest.raises(ControlFlowError,
                       match=r"changes rank from 1 to 2 in the loop body; .*d2s\.stack it after"):
        to_static(rank_grows_in_loop)(d2s.to_tensor(np.ones(3, "float32")))


def test_a_static_cond_on_many_elements_says_how_to_reduce_it():
    from d2s import static
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [3], "float32")
        with pytest.raises(ControlFlowError, match=r"got bool\[3\]; reduce it to one, e\.g\."):
            static.nn.cond(x > 0, lambda: x, lambda: -x)
