"""A static `and`/`or` whose right side is pure and cheap is one elementwise
op (no conditional per loop trip); one that could fail or has effects keeps
Python's short-circuit (a `cond`). Values equal eager on numpy and xla."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static

BACKENDS = ["numpy", "xla"]


def _xla_or_skip(backend):
    if backend == "xla":
        pytest.importorskip("jax")


def iterate_and(x, n):
    i = d2s.zeros([], "int64")
    norm = (x * x).sum()
    while norm > 1e-3 and i < n:
        x = x * 0.5
        norm = (x * x).sum()
        i = i + 1
    return x, i


def iterate_or(x, n):
    i = d2s.zeros([], "int64")
    norm = (x * x).sum()
    while not (norm < 1e-3 or i >= n):
        x = x * 0.5
        norm = (x * x).sum()
        i = i + 1
    return x, i


def test_and_stays_lazy_for_python_values():
    """The added `simple` argument changes nothing for Python values."""
    from d2s.convert.runtime import convert_logical_and, convert_logical_or
    called = []
    assert convert_logical_and(0, lambda: called.append(1), True) == 0
    assert convert_logical_or(3, lambda: called.append(1), True) == 3
    assert called == []


def _program_ops(sf, *args):
    concrete, _ = sf._concrete_for(args, {})
    program = concrete.main_program
    return [op.type for block in program.blocks for op in block.ops]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [iterate_and, iterate_or])
@pytest.mark.parametrize("start,n", [(1.0, 100), (1.0, 3), (1e-4, 5)])
def test_pure_right_side_is_elementwise(fn, backend, start, n):
    _xla_or_skip(backend)
    x = d2s.to_tensor(np.full(4, start, np.float32))
    limit = d2s.to_tensor(np.int64(n))
    want_x, want_i = fn(x, limit)                 # eager: Python's `and`/`or`
    sf = to_static(fn, backend=backend)
    got_x, got_i = sf(x, limit)
    np.testing.assert_array_equal(got_x.numpy(), want_x.numpy())
    assert int(got_i.numpy()) == int(want_i.numpy())
    kinds = _program_ops(sf, x, limit)
    assert "cond" not in kinds
    assert ("logical_and" if fn is iterate_and else "logical_or") in kinds
    if backend == "xla":
        text = sf.lowered_text(x, limit)
        assert "stablehlo.case" not in text and "stablehlo.if" not in text
        assert "stablehlo.while" in text


def first_positive_run(x, n):
    # x[i] with i == n would be out of range: Python never evaluates it then
    i = d2s.zeros([], "int64")
    while i < n and x[i] > 0:
        i = i + 1
    return i


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("values", [[1.0, 2.0, 3.0], [1.0, -1.0, 3.0]])
def test_right_side_that_may_fail_keeps_short_circuit(backend, values):
    _xla_or_skip(backend)
    x = d2s.to_tensor(np.array(values, np.float32))
    n = d2s.to_tensor(np.int64(3))
    want = first_positive_run(x, n)               # eager: x[3] is never read
    sf = to_static(first_positive_run, backend=backend)
    assert int(sf(x, n).numpy()) == int(want.numpy())
    assert "cond" in _program_ops(sf, x, n)       # the indexing is guarded
    if backend == "xla":
        assert "stablehlo.case" in sf.lowered_text(x, n)


CALLS = []


def noted(v):
    CALLS.append(1)
    return v > 0


def with_call(x):
    # a call on the right side: user code, traced once, inside the `cond`
    return (x.sum() > 0 and noted(x.max())).astype("float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_right_side_with_a_call_is_traced_once_in_a_cond(backend):
    _xla_or_skip(backend)
    sf = to_static(with_call, backend=backend)
    assert ", True)" not in sf.code               # not marked simple
    traced = []
    for values in ([1.0, 2.0], [-3.0, 1.0]):
        x = d2s.to_tensor(np.array(values, np.float32))
        want = with_call(x)
        CALLS.clear()
        got = sf(x)
        traced.append(len(CALLS))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert traced == [1, 0]                       # traced once, then the cached program
    assert "cond" in _program_ops(sf, x)


def big_right_side(flag, x):
    # one element in the end, but 256 elements of work: left to the `cond`
    y = flag > 0 and (x * x + 1.0 > 0)[0]
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_costly_right_side_keeps_the_cond(backend):
    _xla_or_skip(backend)
    x = d2s.to_tensor(np.ones(256, np.float32))
    for f in (1.0, -1.0):
        flag = d2s.to_tensor(np.float32(f))
        sf = to_static(big_right_side, backend=backend)
        got = sf(flag, x)
        want = big_right_side(flag, x)
        assert bool(got.numpy()) == bool(np.asarray(want.numpy() if hasattr(want, "numpy")
                                                    else want))
    assert "cond" in _program_ops(sf, flag, x)
