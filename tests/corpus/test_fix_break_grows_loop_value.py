"""Regression (found by the corpus's GPT-2 `generate`): a Python `for` loop
whose `break` fires on a tensor is unrolled, each trip after the first
`break` check guarded by a tensor `if`; a value the loop grows per trip
(`ids = concat([ids, tok], 1)`) then had one length on the taken path and
another on the skipped one, and the `if` raised "has shape [2, 5] and
[2, 4] in the two branches". Those `if`s are a loop's trips: the value gets
an unknown dim there, as a `while` op's carried values do, and equals eager
whichever trip the break fires on. An ordinary tensor `if` still requires
one shape (the contract's rule). On xla a `cond` whose outputs differ in
shape cannot be lowered: the program runs on numpy with the fallback
warning."""
import contextlib

import numpy as np
import pytest

import d2s
from d2s.static import InputSpec
from d2s.static.backend import BackendFallbackWarning
from d2s.static.control_flow import ControlFlowError

from harness import HAS_JAX, close
from test_fix_conv_pool_unknown_dims import running_on

MODES = ["numpy", "interpreter",
         pytest.param("xla", marks=pytest.mark.skipif(not HAS_JAX, reason="needs jax"))]


def grow_until(x, w, limit):
    """Appends a column per trip until its sum passes `limit` (at most 4)."""
    for _ in range(4):
        col = d2s.tanh(x[:, -1:] * w) + 1.0
        x = d2s.concat([x, col], axis=1)
        if x.sum() > limit:
            break
    return x * 2.0


def _falls_back(backend):
    if backend == "numpy":
        return contextlib.nullcontext()
    return pytest.warns(BackendFallbackWarning, match="cond.*different types or shapes")


@pytest.mark.parametrize("mode", MODES)
def test_value_grown_until_a_tensor_break_matches_eager(mode):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3)).astype("float32")
    with running_on(mode) as backend:
        static = d2s.jit.to_static(grow_until, backend=backend, input_spec=[
            InputSpec([2, 3]), InputSpec([]), InputSpec([])])
        lengths = set()
        for limit in (-100.0, 2.0, 6.0, 100.0):  # the break fires on trip 1, ..., never
            results = []
            for fn in (grow_until, static):
                xt = d2s.to_tensor(x, stop_gradient=False)
                wt = d2s.to_tensor(np.float32(0.7), stop_gradient=False)
                first = fn is static and not lengths     # xla warns once, at its first call
                with _falls_back(backend) if first else contextlib.nullcontext():
                    y = fn(xt, wt, d2s.to_tensor(np.float32(limit)))
                    (y * y).sum().backward()
                results.append((y.numpy(), xt.grad.numpy(), wt.grad.numpy()))
            lengths.add(results[0][0].shape[1])
            for what, a, e in zip(("output", "x grad", "w grad"), results[1], results[0]):
                assert a.shape == e.shape, f"{what} (limit {limit})"
                close(a, e, backend, f"{what} (limit {limit})")
        assert len(lengths) > 2                # the break fired on different trips
        assert len(static.program_cache) == 1


def test_tensor_if_still_needs_one_shape():
    def f(x):
        if x.sum() > 0:
            x = d2s.concat([x, x], axis=1)
        return x

    static = d2s.jit.to_static(f, input_spec=[InputSpec([2, 3])])
    with pytest.raises(ControlFlowError, match=r"'x' has shape \[2, 6\] and \[2, 3\] in the "
                                               "two branches"):
        static(d2s.ones([2, 3]))


def grow_while(x, n, limit):
    i = d2s.zeros([], "int64")
    while i < n:
        x = d2s.concat([x, x[:, -1:] * 0.5 + 1.0], axis=1)
        if x.sum() > limit:
            break
        i = i + 1
    return x


@pytest.mark.parametrize("mode", MODES)
def test_value_grown_in_a_tensor_while_until_a_break_matches_eager(mode):
    """The same growth in a tensor `while`: the loop relaxes the dim, and
    the `if` guarding the rest of the body after the break joins two
    unknown dims."""
    x = d2s.to_tensor(np.ones((2, 3), "float32"))
    with running_on(mode) as backend:
        static = d2s.jit.to_static(grow_while, backend=backend, input_spec=[
            InputSpec([2, 3]), InputSpec([], "int64"), InputSpec([])])
        for i, limit in enumerate((-100.0, 14.0, 1e9)):
            args = (x, d2s.to_tensor(np.int64(5)), d2s.to_tensor(np.float32(limit)))
            warns = pytest.warns(BackendFallbackWarning, match="changes shape in the loop") \
                if backend == "xla" and i == 0 else contextlib.nullcontext()
            with warns:
                got = static(*args)
            want = grow_while(*args)
            assert got.shape == want.shape
            close(got.numpy(), want.numpy(), backend, f"limit {limit}")
        assert len(static.program_cache) == 1
