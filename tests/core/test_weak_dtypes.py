"""Weak Python numbers next to tensors: the remembered answers (per dtype and
scalar type) are NumPy's, whatever value asked first; static traces agree."""
import numpy as np
import pytest

import d2s
from d2s import static
from d2s.core.dtypes import weak_scalar_dtype

DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64",
          "complex64"]
SCALARS = [True, False, 0, 1, -1, 300, 2 ** 70, 0.5, 1e300, float("inf"), 1j]


@pytest.mark.parametrize("order", [1, -1])
def test_weak_scalar_dtype_is_numpys_for_every_value(order):
    for dtype in DTYPES:
        for scalar in SCALARS[::order]:
            assert weak_scalar_dtype(np.dtype(dtype), scalar) == \
                np.result_type(np.dtype(dtype), scalar), (dtype, scalar)


@pytest.mark.parametrize("dtype", ["int32", "float16", "float32", "int64", "bool"])
@pytest.mark.parametrize("scalar", [2, 0.5, True])
def test_traced_result_dtype_equals_eager(dtype, scalar):
    value = np.array([1, 0, 1], dtype=dtype)
    eager = (d2s.to_tensor(value) + scalar, scalar * d2s.to_tensor(value))
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [3], dtype)
        traced = (x + scalar, scalar * x)
    for e, t in zip(eager, traced):
        assert np.dtype(t.dtype) == np.dtype(e.numpy().dtype), (dtype, scalar)


@pytest.mark.parametrize("dtype", ["int32", "float16", "float32", "bool"])
@pytest.mark.parametrize("number", [3, 2.5])
def test_weak_variable_takes_the_tensors_dtype_as_its_number_would(dtype, number):
    from d2s.core.ops._base import constant
    value = np.array([1, 0, 1], dtype=dtype)
    want = (number + d2s.to_tensor(value)).numpy().dtype
    for _ in range(2):  # the second build reads the remembered answer
        prog = static.Program()
        with static.program_guard(prog):
            x = static.data("x", [3], dtype)
            weak = constant(number)
            assert weak.weak
            out = weak + x
        assert np.dtype(out.dtype) == want, (dtype, number)
        casts = [op for op in prog.global_block().ops if op.type == "cast"]
        assert bool(casts) == (np.dtype(weak.dtype) != want)
