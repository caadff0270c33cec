"""`print` of a tensor in converted code shows what eager code shows, loops
included: a loop whose values need no gradient prints stop_gradient=True
(it printed False: loop variables were assumed to need one), and a loop
that reads a parameter still prints False after it."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import d2s
from d2s.jit import to_static

BACKENDS = ["numpy", pytest.param("xla", marks=pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="jax not installed"))]


def doubling(x):
    i = d2s.zeros([], "int64")
    while i < 2:
        x = x * 2.0
        print("in", x)
        i = i + 1
    print("after", x)
    return x


_W = d2s.to_tensor(np.full((2, 2), 0.5, "float32"), stop_gradient=False)


def recurrent(x):
    h = d2s.zeros([2])
    i = d2s.zeros([], "int64")
    while i < 2:
        h = d2s.tanh(_W @ h + x)
        i = i + 1
    print("after", h)
    return h


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [doubling, recurrent])
def test_converted_print_shows_eager_flags(fn, backend, capsys):
    x = d2s.to_tensor(np.ones(2, "float32"))
    fn(x)
    eager = capsys.readouterr().out
    to_static(fn, backend=backend)(x)
    static = capsys.readouterr().out
    assert "stop_gradient=" in eager
    assert static == eager
