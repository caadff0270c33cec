"""Random programs, values and gradients: the xla backend equals the numpy
backend (differential testing; every example compiles, so they are few)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s import static  # noqa: E402
from d2s.jit import to_static  # noqa: E402

from xla_helpers import both, op_types  # noqa: E402

UNARY = [d2s.tanh, d2s.relu, d2s.sigmoid, lambda a: a * 0.5, lambda a: -a,
         lambda a: d2s.exp(d2s.tanh(a)), lambda a: d2s.cast(d2s.cast(a, "float32"), "float64")]
BINARY = [d2s.add, d2s.subtract, d2s.multiply, d2s.maximum, lambda a, b: a * 2.0 + b,
          lambda a, b: d2s.where(a > b, a, b * 0.5)]


@st.composite
def chains(draw):
    steps = []
    for k in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            steps.append(("u", draw(st.integers(0, len(UNARY) - 1)), draw(st.integers(0, k + 2))))
        else:
            steps.append(("b", draw(st.integers(0, len(BINARY) - 1)),
                          draw(st.integers(0, k + 2)), draw(st.integers(0, k + 2))))
    return steps


def _chain(steps, h, y, b):
    vals = [h, y, b]
    for s in steps:
        vals.append(UNARY[s[1]](vals[s[2]]) if s[0] == "u"
                    else BINARY[s[1]](vals[s[2]], vals[s[3]]))
    return vals[-1] * 0.5 + h


def _looped(steps_a, steps_b, limit, trips):
    @to_static
    def g(x, y, b):
        h = x
        k = 0
        while k < trips and (h * h).sum() < limit:
            if (h * y).sum() > 0:
                h = d2s.tanh(_chain(steps_a, h, y, b))
            else:
                h = d2s.tanh(_chain(steps_b, h, y, b)) - 0.1
                if h.mean() > 0.5:
                    break
            k += 1
        return h
    return g


@settings(max_examples=8, deadline=None, database=None)
@given(chains(), chains(), st.floats(1.0, 30.0), st.integers(1, 6), st.integers(0, 2 ** 16))
def test_random_loops_with_branches_values_and_gradients(steps_a, steps_b, limit, trips, seed):
    g = _looped(steps_a, steps_b, limit, trips)
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [3, 4], "float64")
        y = static.data("y", [3, 4], "float64")
        b = static.data("b", [4], "float64")
        h = g(x, y, b)
        loss = (h * h).sum()
        grads = [v for v in static.gradients(loss, [x, y, b]) if v is not None]
    assert {"while", "cond", "while_grad"} <= op_types(prog)
    rng = np.random.default_rng(seed)
    feed = {"x": rng.normal(size=(3, 4)), "y": rng.normal(size=(3, 4)),
            "b": rng.normal(size=(4,))}
    both(prog, feed, [h, loss] + grads)
