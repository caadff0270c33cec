"""A `return` inside `try/finally` (and `try/except/finally`) is accepted
when every path returns (issue 25 item 4): the tensor `if` inside the `try`
sees no path that falls off the end. Eager and `to_static` (numpy and xla)
agree on values and gradients; the `finally` runs once per trace."""
import pytest

import d2s
from d2s.jit import to_static

from model_code_helpers import assert_same_run, tensor

LOG = []


def _in_try_finally(x):
    try:
        if x.sum() > 0:
            return x * 2
        return x - 1
    finally:
        LOG.append("done")


def _with_handler(x, table):
    try:
        scale = table["scale"]
        if x.mean() > 0:
            return x * scale
        else:
            return -x
    except KeyError:
        return x + 0.5
    finally:
        LOG.append("done")


def _nested(x):
    y = x * 3
    try:
        try:
            if y.max() > 1:
                return d2s.tanh(y)
            return y
        finally:
            y = y + 1
    finally:
        LOG.append("done")


CASES = [
    (_in_try_finally, lambda: (tensor([1.0, 2.0], grad=True),)),
    (_in_try_finally, lambda: (tensor([-1.0, -2.0], grad=True),)),
    (_with_handler, lambda: (tensor([1.0, 2.0], grad=True), {"scale": 3.0})),
    (_with_handler, lambda: (tensor([-1.0, -2.0], grad=True), {"scale": 3.0})),
    (_with_handler, lambda: (tensor([1.0, 2.0], grad=True), {})),
    (_nested, lambda: (tensor([0.5, 0.25], grad=True),)),
    (_nested, lambda: (tensor([0.1, 0.2], grad=True),)),
]


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn,make", CASES)
def test_returns_inside_try_finally(backend, fn, make):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(fn, backend=backend)
    LOG.clear()
    assert_same_run(static, fn, make)
    assert LOG == ["done", "done"]  # once while tracing, once eagerly
    ops = {op.type for op in static.get_concrete_program(*make()).main_program.all_ops()}
    assert ("cond" in ops) == (make()[1:] != ({},))  # the handler's path has no tensor if


def test_a_try_that_may_fall_through_still_says_so():
    def f(x):
        try:
            if x.sum() > 0:
                return x
        finally:
            pass
    with pytest.raises(Exception, match="None"):
        to_static(f)(tensor([1.0]))
