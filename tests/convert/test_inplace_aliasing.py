"""In-place writes and aliasing in converted code (static.rebinding,
core.views): a write on a program's value is seen through every name that
holds the same tensor -- an alias, the caller's name after a called function
wrote its argument, the base of a view -- as eagerly, also inside tensor
`if`/`while`. Eager vs `to_static` on the numpy and xla backends, values and
gradients; the clear errors where a loop cannot carry the write."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import d2s
from d2s.static import ControlFlowError
from d2s.static.backend import BackendFallbackWarning

rng = np.random.default_rng(7)
X = rng.standard_normal((2, 3))


def _helper(t):
    t[0, 1] = 5.0


def _helper_method(t):
    t.scale_(3.0)


def callee_write(x):
    y = x * 2.0
    _helper(y)
    return y


def alias_write(x):
    y = x * 2.0
    z = y
    y[1] = x[0] * 3.0
    return z + 0.0


def alias_methods(x):
    y = x * 1.0
    z = y
    y.add_(x)
    y.scale_(2.0)
    _helper_method(y)
    return z * x


def alias_zero(x):
    y = x + 1.0
    z = y
    y.zero_()
    return z + x


def nested_target(x):
    y = x * 1.0
    y[0][1] = x[1, 2] * 7.0
    return y


def row_view(x):
    y = x * 1.0
    row = y[1]
    row[2] = x[0, 0] * 4.0
    row.add_(1.0)
    return y


def chain(x):
    y = x.reshape([2, 3, 1]) * 1.0
    y[1][2][0] = x[0, 1] * 2.0
    return y


def item_method(x):
    y = x * 1.0
    y[:, 1:].multiply_(x[:, :2])
    return y


def advanced_copy(x):
    y = x * 1.0
    y[[1, 0]][0] = 9.0
    return y


def reshape_alias(x):
    y = x * 1.0
    z = y.reshape_([3, 2])
    y.unsqueeze_(0)
    return z.sum(axis=0) + y.sum()


def callee_in_if(x):
    y = x * 2.0
    z = y
    if x.sum() > 0:
        _helper(y)
    return z


def alias_in_if(x):
    y = x * 2.0
    z = y
    if x.mean() < 10.0:
        y[1] = 7.0
    else:
        y = y + 1.0
    return z * x, y


def view_in_if(x):
    y = x * 1.0
    row = y[0]
    if x.sum() < 100.0:
        row[1] = x[1, 1] * 3.0
    return y


def alias_in_while(x):
    y = x * 1.0
    z = y
    i = d2s.to_tensor(0)
    while i < 3:
        y[0] += x[1] * 0.5
        i += 1
    return z * 1.0, y


def method_in_while(x):
    y = x * 1.0
    z = y
    for _ in range(d2s.to_tensor(2)):
        y.scale_(1.5)
    return z + 0.0


def list_holder(x):
    y = x * 1.0
    held = [y, {"k": y}]
    y[1, 0] = 2.0
    return held[0] + held[1]["k"]


def write_in_if_in_while(x):
    y = x * 1.0
    z = y
    i = d2s.to_tensor(0)
    while i < 3:
        if y.sum() > -100.0:
            y[1] = y[1] * 2.0
        i += 1
    return z + 0.0, y


def container_item(x):
    y = x * 1.0
    cache = {"k": y}
    k = cache["k"]
    cache["k"][0, 1] = x[1, 0] * 9.0
    if x.sum() < 100.0:
        cache["k"][1, 2] = 3.0
    return k + 0.0, cache["k"]


CASES = [container_item, list_holder, write_in_if_in_while, callee_write, alias_write, alias_methods, alias_zero, nested_target, row_view, chain,
         item_method, advanced_copy, reshape_alias, callee_in_if, alias_in_if, view_in_if,
         alias_in_while, method_in_while]


def _loss(out, w):
    outs = out if isinstance(out, tuple) else (out,)
    return sum((o * d2s.to_tensor(w[: o.size].reshape(o.shape))).sum() for o in outs)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn", CASES, ids=[c.__name__ for c in CASES])
def test_converted_in_place_writes_equal_eager(fn, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    w = rng.standard_normal(64)
    xe = d2s.to_tensor(X, stop_gradient=False)
    want = fn(xe)
    _loss(want, w).backward()
    xs = d2s.to_tensor(X, stop_gradient=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        got = d2s.jit.to_static(fn, backend=backend)(xs)
    _loss(got, w).backward()
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, want):
        assert tuple(g.shape) == tuple(e.shape)
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-12, atol=1e-12)


def callee_in_while(x):
    y = x * 1.0
    i = d2s.to_tensor(0)
    while i < 2:
        _helper(y)
        i += 1
    return y


def written_then_rebound_in_while(x):
    y = x * 1.0
    i = d2s.to_tensor(0)
    while i < 2:
        y[0] = 1.0
        y = y * 2.0
        i += 1
    return y


def alias_read_in_while(x):
    y = x * 1.0
    z = y
    i = d2s.to_tensor(0)
    while i < 2:
        y[0] += 1.0
        i += z.sum().astype("int64") * 0 + 1
    return y


@pytest.mark.parametrize("fn, words", [
    (callee_in_while, ["line", "`t[0, 1] = 5.0`", "y = helper(y)"]),
    (written_then_rebound_in_while, ["'y'", "rebound", "clone()"]),
    (alias_read_in_while, ["'y'", "alias"]),
], ids=["callee", "rebound", "alias-read"])
def test_writes_a_loop_cannot_carry_raise_naming_them(fn, words):
    with pytest.raises(ControlFlowError) as e:
        d2s.jit.to_static(fn)(d2s.to_tensor(X))
    for word in words:
        assert word in str(e.value)


def siblings(x):
    y = x * 1.0
    a = y[0]
    b = y[0]
    a[1] = x[1, 1] * 7.0
    b[0] = 1.0
    r = y[1]
    y[1, 2] = 5.0
    r.add_(x[0])
    return y


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_sibling_views_written_in_turn_equal_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    want = siblings(d2s.to_tensor(X)).numpy()
    got = d2s.jit.to_static(siblings, backend=backend)(d2s.to_tensor(X)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert want[0, 1] == X[1, 1] * 7.0  # a's write survives b's


def input_item(x):
    x[0, 1] = 5.0
    return x * 1.0


def input_view(x):
    row = x[1]
    row.add_(1.0)
    return x * 1.0


def input_callee(x):
    _helper(x)
    return x * 1.0


@pytest.mark.parametrize("fn", [input_item, input_view, input_callee],
                         ids=["item", "view", "callee"])
def test_a_write_reaching_an_input_changes_the_callers_tensor_as_eagerly(fn):
    want_x = d2s.to_tensor(X)
    want = fn(want_x)
    x = d2s.to_tensor(X)
    got = d2s.jit.to_static(fn)(x)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.numpy(), want_x.numpy(), rtol=1e-12)
    assert not np.array_equal(x.numpy(), X)  # (the write did reach it)
