"""The constants a trace makes of Python numbers, and how they are folded.

A trace reads each number's value in its dtype from a table (see
`core.ops._base._scalar_fill`) instead of making a 0-d array each time, and
`full`'s kernel takes np.full's own steps: both must give exactly what
NumPy gives, whichever value asked first (0.0 and -0.0 compare equal, True
and 1 hash alike)."""
import math
import warnings

import numpy as np
import pytest

import d2s
from d2s import static
from d2s.core.ops._base import constant
from d2s.core.registry import OPS

DTYPES = ["bool", "int8", "int64", "uint8", "float16", "float32", "float64", "complex64"]
NUMBERS = [0.0, -0.0, 0, False, 1, True, 1.0, 0.1, -1, 300, 2.5, float("inf"),
           -float("inf"), float("nan")]


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _numpy_value(number, dtype):
    """NumPy's 0-d array of `number` as `dtype`, or the exception type it raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(number, dtype=dtype)
    except (OverflowError, ValueError) as e:
        return type(e)


@pytest.mark.parametrize("order", [1, -1])
def test_number_constants_hold_numpys_value_whichever_number_came_first(order):
    prog = static.Program()
    with static.program_guard(prog):
        for dtype in DTYPES:
            for number in NUMBERS[::order]:
                expected = _numpy_value(number, dtype)
                if isinstance(expected, type):
                    with pytest.raises(expected):
                        constant(number, dtype)
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    var = constant(number, dtype)
                op = prog.global_block().ops[-1]
                assert op.type == "full" and op.outputs[0] is var
                assert op.attrs["dtype"] == np.dtype(dtype).name, (number, dtype)
                made = np.asarray(op.attrs["fill_value"], dtype=dtype)
                assert _same_bits(made, expected), (number, dtype, made, expected)
                if isinstance(number, float) and number == 0 and dtype.startswith("float"):
                    assert math.copysign(1, op.attrs["fill_value"]) == math.copysign(1, number)


def test_a_number_without_dtype_is_weak_and_keeps_its_own_type():
    prog = static.Program()
    with static.program_guard(prog):
        made = [constant(n) for n in (1, True, 1.0, 1, True, 1.0)]
    assert [v.dtype.name for v in made] == ["int64", "bool", "float32"] * 2
    assert all(v.weak for v in made)


@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
def test_full_kernel_equals_np_full(shape):
    kernel = OPS["full"].kernel
    for dtype in DTYPES:
        for number in NUMBERS:
            results = []
            for fill in (lambda: np.full(shape, number, dtype=dtype),
                         lambda: kernel(shape=shape, fill_value=number,
                                        dtype=np.dtype(dtype).name)):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        results.append(fill())
                except (OverflowError, ValueError) as e:  # 300 as int8: both raise
                    results.append(type(e))
            expected, made = results
            if isinstance(expected, type):
                assert made is expected, (shape, number, dtype)
            else:
                assert _same_bits(made, expected), (shape, number, dtype)


def test_0d_full_kernel_gives_a_fresh_array_each_call_and_warns_each_overflow():
    # 0-d fills are remembered (an interpreted run evaluates each constant on
    # every loop trip): each call still hands out its own writable array.
    kernel = OPS["full"].kernel
    for dtype in DTYPES:
        for number in (1, True, 2.5, -1.5):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                first = kernel(shape=(), fill_value=number, dtype=dtype)
                expected = first.copy()
                first[()] = 0
                second = kernel(shape=(), fill_value=number, dtype=dtype)
            assert second is not first and second.flags.writeable
            assert _same_bits(second, expected), (number, dtype)
    for _ in range(2):  # numpy warns on each cast that overflows: so does every call
        with pytest.warns(RuntimeWarning, match="overflow"):
            out = kernel(shape=(), fill_value=1e40, dtype="float32")
        assert np.isinf(out)


def test_traced_constants_run_as_eager_numbers_do():
    @d2s.jit.to_static
    def f(x):
        return (x + 0.0, x * -0.0, 1.0 / (x * 0.0 + -0.0), x + True, x - 1, x * 0.1)

    x = d2s.to_tensor(np.array([1.5, -2.0, 0.0], "float32"))
    with np.errstate(all="ignore"):
        static_out = [t.numpy() for t in f(x)]
        eager_out = [t.numpy() for t in f.dygraph_function(x)]
    for s, e in zip(static_out, eager_out):
        assert _same_bits(s, e), (s, e)
