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


@pytest.fixture
def strict():
    """A fallback to numpy fails the test (these programs must lower)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        yield


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
