"""Random programs exported to ONNX equal the numpy backend (differential
testing): straight-line chains of ops with mixed dtypes, and loops holding
branches, a `break` and a list appended to."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from onnx_helpers import assert_same, run_model

import d2s
from d2s import static
from d2s.jit import to_static
from d2s.onnx.exporter import export_program

UNARY = [d2s.tanh, d2s.relu, d2s.sigmoid, d2s.abs, lambda a: -a, lambda a: a * 0.25,
         lambda a: d2s.exp(d2s.tanh(a)), lambda a: d2s.sqrt(d2s.abs(a) + 1.0),
         lambda a: a.sum(axis=-1, keepdim=True), lambda a: a[::-1], lambda a: a // 0.7,
         lambda a: a % 0.9]
BINARY = [d2s.add, d2s.subtract, d2s.multiply, d2s.maximum, d2s.minimum,
          lambda a, b: d2s.where(a > b, a, b * 0.5), lambda a, b: a / (d2s.abs(b) + 1.0),
          lambda a, b: d2s.cast(a > b, "float32") + b]


@st.composite
def chains(draw, max_ops=8):
    steps = []
    for k in range(draw(st.integers(1, max_ops))):
        if draw(st.booleans()):
            steps.append(("u", draw(st.integers(0, len(UNARY) - 1)), draw(st.integers(0, k + 2))))
        else:
            steps.append(("b", draw(st.integers(0, len(BINARY) - 1)),
                          draw(st.integers(0, k + 2)), draw(st.integers(0, k + 2))))
    return steps


def _chain(steps, *values):
    vals = list(values)
    for s in steps:
        vals.append(UNARY[s[1]](vals[s[2]]) if s[0] == "u"
                    else BINARY[s[1]](vals[s[2]], vals[s[3]]))
    return vals[-1]


def _numpy_backend(prog, feed, fetch):
    return static.Executor(backend="numpy").run(prog, feed=feed, fetch_list=fetch)


@settings(max_examples=25, deadline=None, database=None)
@given(chains(), st.sampled_from(["float32", "float64"]), st.integers(0, 2 ** 16))
def test_random_chains(steps, dtype, seed):
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data(name, shape, dtype) for name, shape in
              (("x", [None, 4]), ("y", [None, 4]), ("b", [4]))]
        out = _chain(steps, *xs)
    rng = np.random.default_rng(seed)
    arrays = [(rng.normal(size=(3, 4)) * 3).astype(dtype),
              (rng.normal(size=(3, 4)) * 3).astype(dtype), rng.normal(size=(4,)).astype(dtype)]
    (want,) = _numpy_backend(prog, dict(zip("xyb", arrays)), [out])
    (got,) = run_model(export_program(prog, prog.global_block().ops, xs, [out]), arrays)
    assert_same(got, want, f"{steps} in {dtype}")


def _looped(steps_a, steps_b, limit, trips):
    @to_static
    def g(x, y, b):
        h = x
        seen = [b]
        k = 0
        while k < trips and (h * h).sum() < limit:
            # a chain may reduce or broadcast: added to h, it keeps h's shape
            if (h * y).sum() > 0:
                h = d2s.tanh(_chain(steps_a, h, y, b) + h * 0.5)
            else:
                h = d2s.tanh(_chain(steps_b, h, y, b) + h) - 0.1
                if h.mean() > 0.4:
                    break
            seen.append(h.sum(axis=0))
            k += 1
        return h, d2s.stack(seen), k
    return g


@settings(max_examples=20, deadline=None, database=None)
@given(chains(4), chains(4), st.floats(1.0, 40.0), st.integers(1, 6), st.integers(0, 2 ** 16))
def test_random_loops_with_branches_break_and_a_list(steps_a, steps_b, limit, trips, seed):
    g = _looped(steps_a, steps_b, limit, trips)
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data("x", [3, 4], "float64"), static.data("y", [3, 4], "float64"),
              static.data("b", [4], "float64")]
        outs = list(g(*xs))
    assert {"while", "cond"} <= {op.type for op in prog.all_ops()}
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(4,))]
    want = _numpy_backend(prog, dict(zip("xyb", arrays)), outs)
    got = run_model(export_program(prog, prog.global_block().ops, xs, outs), arrays)
    for k, (a, b) in enumerate(zip(got, want)):
        assert_same(a, b, f"output {k}")
