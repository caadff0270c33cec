"""A Python number written by a *called* function inside a tensor `if` or
loop (`counter["n"] += 1`, `self.calls += 1` in a helper or sublayer) follows
the data, as eagerly: the branch taken, the trips run.

Before, the write happened once per branch traced and once per trace of a
loop body, whatever the data said (eagerly 0 calls on negative inputs,
converted 3). Now it is carried out of the construct like the construct's
own targets and written back after each run: a tensor holding the number
(as PaddlePaddle's converted code makes it). Eager vs `to_static` on the
numpy and xla backends, over several calls with inputs taking either path.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import d2s

needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                               reason="the xla backend needs jax")
BACKENDS = [pytest.param("numpy", id="numpy"), pytest.param("xla", id="xla", marks=needs_jax)]

SIGNS = [1.0, -1.0, 1.0, 1.0, -1.0]   # the `if` below takes each path more than once


def _number(v):
    return v.item() if isinstance(v, d2s.Tensor) else v


class Stats:
    def __init__(self):
        self.calls = 0
        self.total = 0.0


def _make_branch_fn(stats, counter):
    def bump(x):
        stats.calls += 1
        stats.total += 0.5
        counter["n"] += 1
        return x * 2.0

    def fn(x):
        if x.sum() > 0:
            y = bump(x)
        else:
            y = x - 1.0
        return y
    return fn


@pytest.mark.parametrize("backend", BACKENDS)
def test_counter_in_callee_under_tensor_if_counts_taken_branches(backend):
    e_stats, e_counter = Stats(), {"n": 0}
    s_stats, s_counter = Stats(), {"n": 0}
    eager = _make_branch_fn(e_stats, e_counter)
    converted = d2s.jit.to_static(_make_branch_fn(s_stats, s_counter), backend=backend)
    for sign in SIGNS:
        x = np.full(3, sign, "float32")
        want = eager(d2s.to_tensor(x)).numpy()
        got = converted(d2s.to_tensor(x)).numpy()
        np.testing.assert_allclose(got, want)
        assert _number(s_stats.calls) == e_stats.calls
        assert _number(s_counter["n"]) == e_counter["n"]
        assert _number(s_stats.total) == pytest.approx(e_stats.total)
    assert e_stats.calls == 3   # the positive inputs only


class Ticking(d2s.nn.Layer):
    """A sublayer counting its own calls, as logging or caching code does."""

    def __init__(self):
        super().__init__()
        self.calls = 0
        self.lin = d2s.nn.Linear(3, 3)

    def forward(self, x):
        self.calls += 1
        return self.lin(x)


class Gated(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.block = Ticking()

    def forward(self, x):
        if x.mean() > 0:
            x = self.block(x)
        return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_sublayer_call_count_under_tensor_if(backend):
    d2s.seed(0)
    eager = Gated()
    model = Gated()
    model.set_state_dict(eager.state_dict())
    converted = d2s.jit.to_static(model, backend=backend)
    for sign in SIGNS:
        x = np.full((2, 3), sign, "float32")
        want = eager(d2s.to_tensor(x)).numpy()
        got = converted(d2s.to_tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert _number(model.block.calls) == eager.block.calls


def _make_loop_fn(stats):
    def step(v):
        stats.calls += 1
        return v + 1.0

    def fn(x, n):
        i = d2s.zeros([], "int64")
        while i < n:
            x = step(x)
            i = i + 1
        return x
    return fn


@pytest.mark.parametrize("backend", BACKENDS)
def test_counter_in_callee_under_tensor_while_counts_trips(backend):
    e_stats, s_stats = Stats(), Stats()
    eager = _make_loop_fn(e_stats)
    converted = d2s.jit.to_static(_make_loop_fn(s_stats), backend=backend)
    for trips in (4, 0, 2):
        x = np.ones(2, "float32")
        n = np.array(trips, "int64")
        want = eager(d2s.to_tensor(x), d2s.to_tensor(n)).numpy()
        got = converted(d2s.to_tensor(x), d2s.to_tensor(n)).numpy()
        np.testing.assert_allclose(got, want)
        assert _number(s_stats.calls) == e_stats.calls
    assert e_stats.calls == 6


def test_same_python_value_from_both_branches_stays_python():
    """A flag both branches set alike is a plain Python value after the call
    (nothing to choose between at run time)."""
    class Flagged(d2s.nn.Layer):
        def __init__(self):
            super().__init__()
            self.used = False

        def mark(self, x):
            self.used = True
            return x

        def forward(self, x):
            if x.sum() > 0:
                y = self.mark(x) * 2.0
            else:
                y = self.mark(x) - 1.0
            return y

    layer = Flagged()
    d2s.jit.to_static(layer)(d2s.to_tensor(np.ones(2, "float32")))
    assert layer.used is True


def test_python_valued_condition_keeps_plain_python_numbers():
    """With a Python value deciding (a numpy scalar is a Python value, not an
    input), the `if` and the loop stay plain Python: the number stays a
    Python int, counted as eagerly."""
    stats, counter = Stats(), {"n": 0}
    fn = d2s.jit.to_static(_make_branch_fn(stats, counter))
    for sign in SIGNS:
        fn(np.float32(sign))
    assert type(stats.calls) is int and stats.calls == 3
    assert type(counter["n"]) is int and counter["n"] == 3

    loop_stats = Stats()
    loop = d2s.jit.to_static(_make_python_loop_fn(loop_stats))
    loop(d2s.to_tensor(np.ones(2, "float32")), 3)
    assert type(loop_stats.calls) is int and loop_stats.calls == 3


def _make_python_loop_fn(stats):
    def step(v):
        stats.calls += 1
        return v + 1.0

    def fn(x, n):
        i = 0
        while i < n:   # a Python counter and bound: a Python loop, unrolled
            x = step(x)
            i += 1
        return x
    return fn
