"""Special values on xla equal numpy's (issue 24 item 5): float -> int casts
of NaN, infinities and out-of-range values (numpy's result on this machine:
the target's minimum on x86, through int32 for the narrow types), and `pow`
at -inf / -0.0, where numpy takes sqrt for a broadcast exponent of 0.5."""
import warnings

import numpy as np
import pytest

pytest.importorskip("jax")

import d2s  # noqa: E402

SPECIAL = [np.nan, np.inf, -np.inf, 3e10, -3e10, 1e20, -1e20, 300.7, -300.7, 70000.5, -2.5,
           4.3e9, 0.0, -0.0]


def _both(fn, *arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = fn(*map(d2s.to_tensor, arrays)).numpy()
        got = d2s.jit.to_static(fn, backend="xla")(*map(d2s.to_tensor, arrays)).numpy()
    return expected, got


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dst", ["int64", "int32", "int16", "int8", "uint16", "uint8", "bool"])
def test_float_to_int_casts_of_special_values_equal_numpy(src, dst):
    def cast(x):
        return x.astype(dst)
    x = np.array(SPECIAL, src)
    with np.errstate(invalid="ignore"):
        assert np.array_equal(cast(d2s.to_tensor(x)).numpy(), x.astype(dst))  # eager is numpy
    expected, got = _both(cast, x)
    assert got.dtype == expected.dtype and np.array_equal(got, expected), (expected, got)


def _half(x):
    return x ** 0.5


def _three(x):
    return d2s.pow(x, 3.0)


def _minus_half(x):
    return x ** -0.5


def _elementwise(x, y):
    return d2s.pow(x, y)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", [_half, _three, _minus_half])
def test_pow_at_minus_inf_and_minus_zero_equals_numpy(fn, dtype):
    x = np.array([-np.inf, -0.0, 0.0, np.inf, -2.0, 4.0], dtype)
    expected, got = _both(fn, x)
    assert np.array_equal(got, expected, equal_nan=True), (expected, got)
    assert (np.signbit(got) == np.signbit(expected)).all()


def test_pow_of_two_arrays_at_minus_inf_and_minus_zero_equals_numpy():
    x = np.array([-np.inf, -0.0, -np.inf, -0.0, -np.inf, -0.0, 0.0, np.inf], "float32")
    y = np.array([0.5, 0.5, 3.0, -1.0, -3.0, 3.0, -1.0, -0.5], "float32")
    expected, got = _both(_elementwise, x, y)
    assert np.array_equal(got, expected, equal_nan=True), (expected, got)
    assert (np.signbit(got) == np.signbit(expected)).all()


@pytest.mark.parametrize("x_shape, y_shape", [((), ()), ((1,), ()), ((1,), (1,)), ((1, 1), (1,)),
                                              ((3,), (1,)), ((1,), (1, 1)), ((), (1,))])
def test_pow_by_one_half_of_any_single_element_shapes_equals_numpy(x_shape, y_shape):
    x = np.full(x_shape, -np.inf, "float32")
    y = np.full(y_shape, 0.5, "float32")
    expected, got = _both(_elementwise, x, y)
    assert got.shape == expected.shape
    assert np.array_equal(got, expected, equal_nan=True), (expected, got)
