"""Model code as users write it, on the xla backend: the same values,
dtypes and errors as the numpy backend (its reference), or one
`BackendFallbackWarning` and numpy's result.

Found by this file (each failed before its fix):
* integer `x // 0` gave -1 or -2 on xla (XLA's division by zero), 0 on numpy:
  a silent wrong answer, e.g. `n // k` with a `k` that comes out 0.
* an integer to a negative integer power gave XLA's wrapped value where numpy
  raises `ValueError`: the call now runs again on numpy, which raises it.
* `int32 / int32` and the arithmetic of bools (`b // b`, `b ** b`) raised
  `LoweringError` while lowering: JAX's result dtypes (float32, int32) are
  not NumPy 2's (float64, int8).
"""
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s.jit import to_static  # noqa: E402
from d2s.static.backend import BackendFallbackWarning  # noqa: E402

from xla_helpers import assert_same  # noqa: E402


def outcome(fn, backend, *arrays):
    """("ok", [numpy results]) or ("raises", type, message) of `fn` converted
    for `backend` and called on fresh Tensors of `arrays`."""
    try:
        with np.errstate(all="ignore"):
            out = to_static(fn, backend=backend)(*(d2s.to_tensor(a) for a in arrays))
    except Exception as e:  # noqa: BLE001 - the error is the result compared
        return ("raises", type(e), str(e))
    outs = out if isinstance(out, tuple) else (out,)
    return ("ok", [np.asarray(o.numpy()) for o in outs])


def same_outcome(fn, *arrays):
    """Runs `fn` on both backends; the xla outcome equals numpy's."""
    want, got = outcome(fn, "numpy", *arrays), outcome(fn, "xla", *arrays)
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        assert_same(got[1], want[1])
    else:
        assert got[1:] == want[1:]
    return want


INTS = np.array([-7, -2, -1, 0, 1, 2, 5, np.iinfo(np.int64).min, np.iinfo(np.int64).max])


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8"])
def test_integer_division_by_zero_and_overflow_equal_numpy(strict, dtype):
    x, y = (a.ravel().astype(dtype) for a in np.meshgrid(INTS, INTS))

    def divmod_(a, b):
        return a // b, a % b, 7 // b, b // 3

    want = same_outcome(divmod_, x, y)
    assert want[0] == "ok" and (want[1][0][y == 0] == 0).all()


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_an_integer_to_a_negative_power_raises_numpys_error(strict, dtype):
    def power(a, b):
        return a ** b

    base = np.array([2, -3, 5], dtype)
    want = same_outcome(power, base, np.array([3, 2, 1], dtype))
    assert want[0] == "ok"
    want = same_outcome(power, base, np.array([3, -1, 1], dtype))
    assert want[0] == "raises" and want[1] is ValueError


def _arithmetic(a, b):
    return a / b, a // b, a % b, a ** b, a + b, a * b, a - b if a.dtype != np.bool_ else a


@pytest.mark.parametrize("dtype", ["int32", "int8", "bool", "uint8"])
def test_arithmetic_gives_numpys_dtypes(strict, dtype):
    x = np.array([1, 0, 1, 0, 1]).astype(dtype)
    y = np.array([1, 1, 0, 0, 1]).astype(dtype)
    assert same_outcome(_arithmetic, x, y)[0] == "ok"


# ---- lists appended to under a tensor `if` ------------------------------------------
# Before: every such program ran on numpy ("the two branches give values of
# different types or shapes"): the branch that appends gives one more row.
def _append_if_positive(x):
    outs = [x]
    if x.sum() > 0:
        outs.append(x * 2.0)
    return d2s.stack(outs)


def _append_on_both_paths_or_twice(x):
    outs = []
    if x.sum() > 0:
        outs.append(x)
        outs.append(x + 1.0)
    else:
        outs.append(-x)
    return d2s.stack(outs)


def _append_then_loop(x):
    outs = [x]
    if x.sum() > 0:
        outs.append(x * 2.0)
    while x.sum() < 4.0:  # the loop carries the array the `if` left
        x = x + 1.0
        outs.append(x)
    return d2s.stack(outs), x


@pytest.mark.parametrize("fn", [_append_if_positive, _append_on_both_paths_or_twice,
                                _append_then_loop])
@pytest.mark.parametrize("value", [1.0, -1.0, -9.0])
def test_appends_under_a_tensor_if_lower_and_equal_numpy(strict, fn, value):
    want = same_outcome(fn, np.array([value, 0.5]))
    assert want[0] == "ok"


@pytest.mark.parametrize("first", [1.0, -1.0])
def test_the_gradient_of_an_append_under_a_tensor_if_lowers_and_equals_numpy(first):
    # Before: the backward raised jax's TypeError while lowering (its branches'
    # gradients differ in shape) once the forward lowered; then, with the
    # false branch taken, it ran on numpy with one warning (the cotangent has
    # one row, and lowering the true branch's gradient, `g[1]`, raised
    # IndexError though no run takes it). Now the cotangent is read as a
    # tensor array (see test_xla_lists.py): no fallback either way.
    x0 = np.array([first, 0.5])
    grads = {}
    for backend in ("numpy", "xla"):
        x = d2s.to_tensor(x0, stop_gradient=False)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", BackendFallbackWarning)
            out = to_static(_append_if_positive, backend=backend)(x)
            (out * out).sum().backward()
        grads[backend] = x.grad.numpy()
        fallbacks = [w for w in seen if issubclass(w.category, BackendFallbackWarning)]
        assert not fallbacks, [str(w.message) for w in fallbacks]
    np.testing.assert_allclose(grads["xla"], grads["numpy"], rtol=1e-12)


# ---- greedy decoding: tokens collected in a list, concatenated at the end ------------
# Before: `d2s.concat(outs)` of a list appended in a tensor loop ran on numpy
# ("it reads a tensor array, whose length is a run-time value").
def _greedy(h, w, eos, max_len: int = 6):
    outs = []
    i = 0
    while i < max_len:
        h = d2s.tanh(d2s.matmul(h, w))
        tok = h.argmax(axis=-1)
        outs.append(tok)
        i += 1
        if tok[0] == eos:
            break
    return d2s.concat(outs), h


def _rows_until(x, limit):
    rows = []
    while x.sum() < limit:
        x = x * 1.5 + 1.0
        rows.append(x)
        rows.append(-x)
    return d2s.concat(rows), d2s.concat(rows, axis=0).reshape([-1])


@pytest.mark.parametrize("eos", [0, 1, 2, 3, 99])
def test_greedy_decoding_concatenates_its_tokens_on_xla(strict, eos):
    rng = np.random.default_rng(3)
    h, w = rng.normal(size=(1, 4)), rng.normal(size=(4, 4))
    want = same_outcome(_greedy, h, w, np.array(eos))
    assert want[0] == "ok"


@pytest.mark.parametrize("limit", [-5.0, 3.0, 40.0, 5000.0])
def test_concat_of_rows_appended_in_a_loop_equals_numpy(limit):
    x = np.array([[0.5, 1.0, -0.25]])
    want = same_outcome(_rows_until, x, np.array(limit))
    assert want[0] == "ok"


@pytest.mark.parametrize("limit", [3.0, 40.0, 5000.0])
def test_gradients_through_concat_of_rows_appended_in_a_loop_equal_numpy(limit):
    # Before: the backward of `concat(rows)` ran on numpy (`reshape_like` to a
    # tensor array's shape)
    x0 = np.array([[0.5, 1.0, -0.25]])
    grads, fallbacks = {}, {}
    for backend in ("numpy", "xla"):
        x = d2s.to_tensor(x0, stop_gradient=False)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", BackendFallbackWarning)
            rows = to_static(_concat_rows, backend=backend)(x, d2s.to_tensor(np.array(limit)))
            (rows * rows).sum().backward()
        grads[backend] = x.grad.numpy()
        fallbacks[backend] = [str(w.message) for w in seen
                              if issubclass(w.category, BackendFallbackWarning)]
    np.testing.assert_allclose(grads["xla"], grads["numpy"], rtol=1e-10)
    assert not any("reshape_like" in m for m in fallbacks["xla"]), fallbacks["xla"]


def _concat_rows(x, limit):
    rows = []
    while x.sum() < limit:
        x = x * 1.5 + 1.0
        rows.append(x)
    return d2s.concat(rows)
