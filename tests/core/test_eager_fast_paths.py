"""The eager fast paths (`binary_function`, `unary_function`, `x[i]`, `bool()`,
reductions with axis=None, matmul's rule skipping unwanted halves) against
the general path (`lift` + `bind`) and against numpy.

The general path is forced with `state.eager_guard()`: ops still run eagerly,
but "no program is being built" is no longer known up front, so every op goes
through `lift_pair` / `bind` as in the static-capable route.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

import d2s
from d2s.core import state
from d2s.core.tensor import Tensor, new_tensor
from d2s.static import Program, data, gradients, program_guard

BINARY = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
    "divide": operator.truediv, "floor_divide": operator.floordiv,
    "remainder": operator.mod, "pow": operator.pow, "maximum": np.maximum,
    "minimum": np.minimum, "equal": operator.eq, "not_equal": operator.ne,
    "less_than": operator.lt, "less_equal": operator.le, "greater_than": operator.gt,
    "greater_equal": operator.ge, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}
DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"]
# Python scalars of every kind, incl. values that overflow small ints and -0.0.
SCALARS = [True, False, 0, 3, -1, 300, 1.5, -0.0, 1e40]


def _run(fn):
    """(result array, None) or (None, exception type) of `fn()`, numpy warnings off."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = fn()
        except Exception as e:                              # noqa: BLE001 - compared below
            return None, type(e)
    return np.asarray(out.numpy() if isinstance(out, Tensor) else out), None


def _same(a, b):
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    if a.dtype.kind == "f":  # -0.0 stays -0.0
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


def _binary_cases():
    # a list, not a generator: pytest 10 takes only collections in parametrize
    return [pytest.param(name, dt, id=f"{name}-{dt}") for name in BINARY for dt in DTYPES]


@pytest.mark.parametrize("name,dtype", _binary_cases())
def test_binary_fast_path_matches_general_path_and_numpy(name, dtype):
    """Tensor (op) Python scalar, both sides, every scalar kind: the fast path
    gives the general path's dtype, values and errors; both follow numpy."""
    fn = getattr(d2s.core.ops, name)
    arr = np.array([0, 1, 2, 5], dtype=np.int64).astype(dtype)
    t = d2s.to_tensor(arr)
    for s in SCALARS:
        for left in (True, False):
            args = (t, s) if left else (s, t)
            fast, fast_err = _run(lambda: fn(*args))
            with state.eager_guard():
                slow, slow_err = _run(lambda: fn(*args))
            assert fast_err == slow_err, (s, left, fast_err, slow_err)
            if fast_err is None:
                _same(fast, slow)
                want, want_err = _run(lambda: BINARY[name](*((arr, s) if left else (s, arr))))
                if want_err is None:
                    _same(fast, want)


@pytest.mark.parametrize("dx,dy", [("float32", "float64"), ("int32", "float32"),
                                   ("bool", "int8"), ("uint8", "int8"), ("int64", "float16")])
def test_binary_fast_path_on_two_tensors_promotes_as_numpy(dx, dy):
    a = np.array([[1, 2, 3]]).astype(dx)
    b = np.array([[2], [0]]).astype(dy)  # broadcasting too
    for name in ("add", "multiply", "divide", "less_than", "maximum"):
        fn = getattr(d2s.core.ops, name)
        fast, _ = _run(lambda: fn(d2s.to_tensor(a), d2s.to_tensor(b)))
        with state.eager_guard():
            slow, _ = _run(lambda: fn(d2s.to_tensor(a), d2s.to_tensor(b)))
        want, _ = _run(lambda: BINARY[name](a, b))
        _same(fast, slow)
        _same(fast, want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_unary_fast_path_matches_general_path(dtype):
    arr = np.array([-2, 0, 1, 3]).astype(dtype)
    for name in ("neg", "exp", "tanh", "abs", "sqrt", "sign", "logical_not", "relu"):
        fn = getattr(d2s.core.ops, name)
        fast, fast_err = _run(lambda: fn(d2s.to_tensor(arr)))
        with state.eager_guard():
            slow, slow_err = _run(lambda: fn(d2s.to_tensor(arr)))
        assert fast_err == slow_err, name
        if fast_err is None:
            _same(fast, slow)


def test_numpy_scalars_and_arrays_take_the_general_path():
    """Only Python scalars are weak; numpy scalars keep their dtype (NumPy 2)."""
    t = d2s.to_tensor(np.array([1.0, 2.0], np.float32))
    assert (t * np.float64(2.0)).dtype == np.float64
    assert (t + np.array([1.0, 1.0])).dtype == np.float64
    assert (t * 2.0).dtype == np.float32


def test_binary_fast_path_gradients_equal_general_path():
    """The scalar operand is wrapped for the tape only when a gradient is wanted,
    and the recorded node gives the general path's gradients."""
    x0 = np.array([0.5, -1.5, 2.0])

    def grads():
        x = d2s.to_tensor(x0, stop_gradient=False)
        y = d2s.to_tensor(np.array([2.0, 3.0, -1.0]), stop_gradient=False)
        z = ((2.0 - x) * y / 4.0 + x ** 2 - 3 ** x + d2s.tanh(x) * x).sum()
        z.backward()
        return x.grad.numpy(), y.grad.numpy()

    fast = grads()
    with state.eager_guard():
        slow = grads()
    for f, s in zip(fast, slow):
        np.testing.assert_allclose(f, s, rtol=1e-12)
    yv = np.array([2.0, 3.0, -1.0])
    want_x = -yv / 4.0 + 2 * x0 - np.log(3.0) * 3 ** x0 + (1 - np.tanh(x0) ** 2) * x0 + np.tanh(x0)
    np.testing.assert_allclose(fast[0], want_x, rtol=1e-12)
    np.testing.assert_allclose(fast[1], (2.0 - x0) / 4.0, rtol=1e-12)


def test_no_tape_node_without_a_gradient():
    x = d2s.to_tensor(np.array([1.0, 2.0]))                   # stop_gradient
    w = d2s.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    for out in (x * 2.0, 2.0 * x, x + x, -x):
        assert out.stop_gradient and out._node is None
    with d2s.no_grad():
        for out in (w * 2.0, w + w, -w, w[0], w @ w):
            assert out.stop_gradient and out._node is None
    for out in (w * 2.0, 1.0 - w, w + x, -w, w[0], w @ w, w.sum()):
        assert not out.stop_gradient and out._node is not None


def test_fast_paths_build_ops_in_a_program():
    """While a program is being built the same calls append ops (never run)."""
    prog = Program()
    with program_guard(prog):
        v = data("x", (None, 3), "float32")
        outs = [v * 2.0, 1.0 - v, v + v, -v, d2s.tanh(v), v[0], v @ d2s.ones([3, 2]),
                v.sum(), v.max()]
    assert all(not isinstance(o, Tensor) for o in outs)
    types = [op.type for op in prog.global_block().ops]
    for want in ("multiply", "subtract", "add", "neg", "tanh", "getitem", "matmul", "sum",
                 "max"):
        assert want in types, (want, types)
    d2s.enable_static()
    try:  # enable_static(): eager Tensors build too
        t = d2s.to_tensor(np.ones(3, np.float32))
        assert not isinstance(t * 2.0, Tensor)
        assert not isinstance(t[0], Tensor)
    finally:
        d2s.disable_static()


# ---- x[i] ------------------------------------------------------------------------------------

def test_int_index_fast_path_matches_numpy_and_general_path():
    arr = np.arange(24.0).reshape(4, 3, 2)
    t = d2s.to_tensor(arr)
    for i in range(-4, 4):
        _same(t[i].numpy(), arr[i])
        with state.eager_guard():
            _same(t[i].numpy(), arr[i])
    for bad in (4, -5):
        with pytest.raises(IndexError):
            t[bad]
        with state.eager_guard(), pytest.raises(IndexError):
            t[bad]
    with pytest.raises(TypeError, match="Python bool"):
        t[True]


def test_int_index_gradient_in_a_loop():
    arr = np.arange(6.0).reshape(3, 2)
    x = d2s.to_tensor(arr, stop_gradient=False)
    total = x[0] * 0.0
    for i in range(3):
        total = total + x[i] * float(i + 1)
    total.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.array([[1, 1], [2, 2], [3, 3]], float))


# ---- bool() and friends -------------------------------------------------------------------

@pytest.mark.parametrize("value", [0.0, -0.0, 2.5, float("nan"), 0, 7, True, False])
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_bool_of_a_one_element_tensor_is_python_truth(value, shape):
    t = d2s.to_tensor(np.full(shape, value))
    assert bool(t) is bool(value)
    assert float(t) == float(value) or value != value
    if isinstance(value, int):
        assert int(t) == int(value)


def test_bool_of_many_or_no_elements_is_ambiguous():
    for arr in (np.array([1.0, 2.0]), np.zeros((0,))):
        with pytest.raises(ValueError, match="only one-element tensors"):
            bool(d2s.to_tensor(arr))


# ---- reductions -------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 1, 4)])
def test_full_reductions_match_numpy(shape):
    arr = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    t = d2s.to_tensor(arr)
    for name in ("sum", "mean", "max", "min"):
        got = getattr(t, name)()
        want = getattr(np, name)(arr)
        assert got.shape == () and got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    with pytest.raises(ValueError, match="out of range"):
        t.sum(axis=len(shape) if shape else 1)


# ---- matmul's rule skips the half nobody reads ----------------------------------------

def test_matmul_gradient_with_a_data_operand():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 2))
    g = rng.normal(size=(4, 2))
    for a_wants, b_wants in ((False, True), (True, False), (True, True)):
        x = d2s.to_tensor(a, stop_gradient=not a_wants)
        w = d2s.to_tensor(b, stop_gradient=not b_wants)
        (x @ w * d2s.to_tensor(g)).sum().backward()
        if a_wants:
            np.testing.assert_allclose(x.grad.numpy(), g @ b.T, rtol=1e-12)
        else:
            assert x.grad is None
        if b_wants:
            np.testing.assert_allclose(w.grad.numpy(), a.T @ g, rtol=1e-12)
        else:
            assert w.grad is None
    # vectors too (the 1-D branches of the rule)
    v = d2s.to_tensor(a[:, 0])
    m = d2s.to_tensor(a, stop_gradient=False)
    (v @ m).sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), np.outer(a[:, 0], np.ones(3)), rtol=1e-12)
    u = d2s.to_tensor(b[:, 0], stop_gradient=False)
    (v[:3] @ u).backward()
    np.testing.assert_allclose(u.grad.numpy(), a[:3, 0], rtol=1e-12)


def test_static_gradients_of_matmul_wrt_data_still_computed():
    """Static backward decides what it needs itself: a data Variable (whose
    stop_gradient is True) still gets its gradient when asked for."""
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(3, 4)).astype(np.float32)
    prog = Program()
    with program_guard(prog):
        x = data("x", (2, 3), "float32")
        w = data("w", (3, 4), "float32")
        (gx, gw) = gradients([(x @ w).sum()], [x, w])
    got = d2s.static.Executor().run(prog, feed={"x": a, "w": b}, fetch_list=[gx, gw])
    np.testing.assert_allclose(got[0], np.ones((2, 4), np.float32) @ b.T, rtol=1e-5)
    np.testing.assert_allclose(got[1], a.T @ np.ones((2, 4), np.float32), rtol=1e-5)


# ---- Tensor creation ---------------------------------------------------------------------

def test_every_creation_path_fills_every_slot():
    """`new_tensor` (the hot path) and `Tensor()` both set each slot, so a slot
    added to Tensor without updating both fails here, not in a user's program."""
    x = d2s.to_tensor(np.ones(2), stop_gradient=False)
    made = [new_tensor(np.ones(2)), Tensor(np.ones(2)), Tensor._from_array(np.ones(2)),
            x * 2.0, x + x, -x, x[0], x.sum(), x @ x, x.detach()]
    for t in made:
        for slot in Tensor.__slots__:
            if slot != "__weakref__":
                getattr(t, slot)  # raises AttributeError when a path forgot it


# ---- the process-wide "nothing is building" flag -------------------------------------------

def testall_eager_flag_follows_builds_errors_and_static_mode():
    assert state.all_eager[0]
    prog = Program()
    with pytest.raises(ZeroDivisionError):
        with program_guard(prog):
            assert not state.all_eager[0]
            1 / 0
    assert state.all_eager[0]
    d2s.enable_static()
    assert not state.all_eager[0]
    d2s.disable_static()
    assert state.all_eager[0]
    with state.eager_guard():
        assert not state.all_eager[0]
    assert state.all_eager[0]


def test_eager_ops_in_one_thread_while_another_builds():
    """A thread building a program turns the flag off for all threads; eager
    ops elsewhere then take the general path and still run now."""
    import threading
    inside, release = threading.Event(), threading.Event()
    built = {}

    def build():
        prog = Program()
        with program_guard(prog):
            v = data("x", (2,), "float32")
            inside.set()
            release.wait(10)
            built["out"] = v * 2.0
        built["types"] = [op.type for op in prog.global_block().ops]

    worker = threading.Thread(target=build)
    worker.start()
    assert inside.wait(10)
    try:
        assert not state.all_eager[0]
        x = d2s.to_tensor(np.array([1.0, 2.0], np.float32), stop_gradient=False)
        y = (x * 3.0 + x).sum()
        assert isinstance(y, Tensor) and float(y) == 12.0
        y.backward()
        np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0])
        assert isinstance(x[0], Tensor) and isinstance(d2s.tanh(x), Tensor)
    finally:
        release.set()
        worker.join(10)
    assert state.all_eager[0]
    assert not isinstance(built["out"], Tensor) and "multiply" in built["types"]
