"""Errors raised while building or running converted code keep their type,
and their message (or notes) names the user's original file, `line N` and
the source text of that line (DESIGN §4).

Each offending line carries a `# LOC:<tag>` marker; the expected line number
is found by reading this file, so the tests do not depend on line counting.
"""
import os

import numpy as np
import pytest

import d2s
from d2s.jit import to_static

_THIS_FILE = os.path.abspath(__file__)
with open(_THIS_FILE) as _fh:
    _LINES = _fh.read().splitlines()


def _line_of(tag):
    hits = [i + 1 for i, line in enumerate(_LINES)
            if line.rstrip().endswith(f"# LOC:{tag}") and "_line_of" not in line]
    assert len(hits) == 1, tag
    return hits[0]


def _code_of(tag):
    return _LINES[_line_of(tag) - 1].split("#")[0].strip()


def _full_text(exc):
    return str(exc) + "".join(getattr(exc, "__notes__", []))


def _assert_located(exc, tag):
    text = _full_text(exc)
    assert os.path.basename(_THIS_FILE) in text, text
    assert _THIS_FILE in text or os.path.realpath(_THIS_FILE) in text, text
    assert f"line {_line_of(tag)}" in text, f"expected line {_line_of(tag)}:\n{text}"
    assert _code_of(tag) in text, f"expected source text {_code_of(tag)!r}:\n{text}"


# Out-of-range indices known only at run time raise on numpy; XLA clamps them
# (README, backend table): the tests of that run-time error pin numpy.
NUMPY_RAISES = "numpy"


def T(v, dtype=np.float64):
    return d2s.to_tensor(np.array(v, dtype))


# ---- build (trace) time -------------------------------------------------------------

def matmul_in_tensor_branch(a, b):
    if a.sum() > 0:
        c = a @ b  # LOC:matmul
    else:
        c = a
    return c


def test_shape_error_in_tensor_if_branch_names_the_line():
    with pytest.raises(ValueError) as info:
        to_static(matmul_in_tensor_branch)(T([[1.0, 2.0]]), T([[1.0, 2.0, 3.0]]))
    _assert_located(info.value, "matmul")
    assert "matmul" in str(info.value)


def _helper_bad_matmul(a, b):
    return a @ b  # LOC:helper


def calls_helper_in_branch(a, b):
    if a.sum() > 0:
        c = _helper_bad_matmul(a, b)
    else:
        c = a
    return c


def test_error_in_a_recursively_converted_call_names_the_callees_line():
    with pytest.raises(ValueError) as info:
        to_static(calls_helper_in_branch)(T([[1.0, 2.0]]), T([[1.0, 2.0, 3.0]]))
    _assert_located(info.value, "helper")


def matmul_in_tensor_while(x, w):
    while x.sum() < 10:
        x = x @ w  # LOC:while_body
    return x


def test_shape_error_in_tensor_while_body_names_the_line():
    with pytest.raises(ValueError) as info:
        to_static(matmul_in_tensor_while)(T([1.0, 2.0]), T([[1.0, 2.0, 3.0]]))
    _assert_located(info.value, "while_body")


def one_branch_only(x):
    if x.sum() > 0:
        z = x + 1
    return z  # LOC:one_branch


def test_name_set_in_one_branch_is_a_name_error_naming_variable_and_line():
    with pytest.raises(NameError) as info:
        to_static(one_branch_only)(T([1.0, 2.0]))
    assert "'z'" in str(info.value)
    _assert_located(info.value, "one_branch")


def index_in_unrolled_loop(x):
    s = x[0]
    i = 0
    while i < 4:  # a Python condition: unrolled while tracing
        s = s + x[i]  # LOC:trace_index
        i += 1
    return s


def test_index_error_in_unrolled_loop_body_names_the_line():
    with pytest.raises(IndexError) as info:
        to_static(index_in_unrolled_loop)(T([1.0, 2.0, 3.0]))
    _assert_located(info.value, "trace_index")


def zero_division_on_python_values(x, d):
    if x > 0:
        y = x / d  # LOC:zerodiv
    else:
        y = x
    return y


def test_python_exception_while_tracing_keeps_type_and_names_the_line():
    with pytest.raises(ZeroDivisionError) as info:
        to_static(zero_division_on_python_values)(1.0, 0)
    _assert_located(info.value, "zerodiv")


class _TwoArgError(Exception):
    def __init__(self, code, detail):
        super().__init__(code, detail)
        self.code, self.detail = code, detail


def raises_custom_error(x, flag):
    if flag:
        raise _TwoArgError(7, "custom failure")  # LOC:custom
    return x


def test_custom_exception_type_and_attributes_survive_with_location_in_notes():
    with pytest.raises(_TwoArgError) as info:
        to_static(raises_custom_error)(T([1.0]), True)
    assert info.value.code == 7 and info.value.detail == "custom failure"
    _assert_located(info.value, "custom")


def dtype_mismatch_branches(x):
    if x.sum() > 0:  # LOC:mismatch
        y = x
    else:
        y = x.astype("float32")
    return y


def test_branch_output_mismatch_names_the_if_line():
    with pytest.raises(Exception) as info:
        to_static(dtype_mismatch_branches)(T([1.0, 2.0]))
    _assert_located(info.value, "mismatch")


# ---- run time -------------------------------------------------------------------------

def index_in_tensor_loop(x, n):
    s = x[0]
    for i in range(n):
        s = s + x[i]  # LOC:run_index
    return s


def test_index_error_at_run_time_in_tensor_loop_names_the_line():
    sf = to_static(index_in_tensor_loop, backend=NUMPY_RAISES)
    np.testing.assert_allclose(sf(T([1.0, 2.0, 3.0]), T(2, np.int64)).numpy(), 4.0)
    with pytest.raises(IndexError) as info:
        sf(T([1.0, 2.0, 3.0]), T(5, np.int64))
    _assert_located(info.value, "run_index")
    assert len(sf.program_cache) == 1  # the failure came from the cached program


def index_in_tensor_branch(x, i):
    if x.sum() > 0:
        y = x[i] * 2  # LOC:branch_index
    else:
        y = x[0]
    return y


def test_index_error_at_run_time_in_tensor_branch_names_the_line():
    sf = to_static(index_in_tensor_branch, backend=NUMPY_RAISES)
    np.testing.assert_allclose(sf(T([1.0, 2.0]), T(1, np.int64)).numpy(), 4.0)
    # the branch holding the bad index is not taken: no error
    np.testing.assert_allclose(sf(T([-1.0, -2.0]), T(9, np.int64)).numpy(), -1.0)
    with pytest.raises(IndexError) as info:
        sf(T([1.0, 2.0]), T(9, np.int64))
    _assert_located(info.value, "branch_index")


def raise_in_taken_tensor_branch(x):
    if x.sum() < 0:
        raise ValueError("x must have a non-negative sum")  # LOC:user_raise
    return x * 2


def test_user_raise_in_tensor_branch_taken_at_run_time():
    sf = to_static(raise_in_taken_tensor_branch)
    np.testing.assert_allclose(sf(T([1.0, 2.0])).numpy(), [2.0, 4.0])
    with pytest.raises(ValueError, match="x must have a non-negative sum") as info:
        sf(T([-1.0, -2.0]))
    _assert_located(info.value, "user_raise")
    assert len(sf.program_cache) == 1


def raise_in_nested_branch_in_loop(x):
    k = 0
    while k < 5 and x.sum() < 100:
        k = k + 1
        x = x * 3
        if x.max() > 50:
            raise OverflowError("grew too fast")  # LOC:loop_raise
    return x


def test_user_raise_inside_tensor_loop_taken_at_run_time():
    sf = to_static(raise_in_nested_branch_in_loop)
    np.testing.assert_allclose(sf(T([0.01, 0.02])).numpy(), [2.43, 4.86], rtol=1e-6)
    with pytest.raises(OverflowError, match="grew too fast") as info:
        sf(T([1.0, 2.0]))
    _assert_located(info.value, "loop_raise")


def test_errors_do_not_poison_the_cache_or_later_calls():
    sf = to_static(index_in_tensor_loop, backend=NUMPY_RAISES)
    for _ in range(2):
        with pytest.raises(IndexError):
            sf(T([1.0, 2.0, 3.0]), T(7, np.int64))
    np.testing.assert_allclose(sf(T([1.0, 2.0, 3.0]), T(3, np.int64)).numpy(), 7.0)
    assert len(sf.program_cache) == 1
