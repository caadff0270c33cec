"""The walrus operator in converted code: in the operand evaluated first of
`and`/`or`, in a `while` test with `break` or `return` in the body
(static == eager == numpy, values, dtypes and gradients, on both executors);
on a path taken only at run time, a clear error.
"""

import numpy as np
import pytest

import d2s
from d2s import static
from d2s.convert.api import convert_function
from d2s.jit import to_static

from model_code_helpers import outputs_and_grads, op_types


def _walrus_first_in_and(x):
    z = x * 0
    if (z := x * -1.5).sum() > -1.5 and x.sum() > -2.0:
        x = x * 2
    return x + z


def _walrus_in_ternary_test(x):
    z = x * 0
    y = x * 3 if (z := x * 2).sum() > 0 else x
    return y + z


def _ref_walrus_first_in_and(x):
    z = x * -1.5
    return (x * 2 if z.sum() > -1.5 and x.sum() > -2.0 else x) + z


@pytest.mark.parametrize("fn, ref", [
    (_walrus_first_in_and, _ref_walrus_first_in_and),
    (_walrus_in_ternary_test, lambda x: (x * 3 if (x * 2).sum() > 0 else x) + x * 2),
])
def test_walrus_in_the_operand_evaluated_first_is_converted(fn, ref, each_executor):
    # Was left as Python `and` / ternary: bool() of a Variable, a TypeError.
    sf = to_static(fn)
    for v in (-1.0, 0.5, 1.0):
        x = np.array([v, v, v])
        (out,), (gx,) = outputs_and_grads(sf, x)
        np.testing.assert_allclose(out, ref(x))
        (_, ), (e_gx,) = outputs_and_grads(fn, x)
        np.testing.assert_allclose(gx, e_gx)
        np.testing.assert_allclose(fn(x), ref(x))  # the same source on numpy: Python
    assert "cond" in op_types(sf, x)


def _walrus_on_the_lazy_side(x):
    z = x * 0
    if x.sum() > 0 and (z := x * 2).sum() > 1:
        x = x + 1
    return x + z


def _walrus_in_a_ternary_branch(x):
    z = x * 0
    y = (z := x * 2) if x.sum() > 0 else x
    return y + z


@pytest.mark.parametrize("fn, construct", [(_walrus_on_the_lazy_side, "`and`/`or`"),
                                           (_walrus_in_a_ternary_branch,
                                            "a conditional expression")])
def test_walrus_on_a_path_taken_at_run_time_is_a_clear_error(fn, construct):
    sf = to_static(fn)
    with pytest.raises(static.ControlFlowError) as info:
        sf(d2s.to_tensor(np.array([1.0, 2.0])))
    text = str(info.value)
    assert construct in text and "'z'" in text and "test_walrus.py" in text
    assert len(sf.program_cache) == 0
    # numpy arrays and eager Tensors keep Python semantics: no error.
    converted = convert_function(fn)[0]
    for v in (2.0, -2.0, 0.25):
        np.testing.assert_array_equal(converted(np.array([v])), fn(np.array([v])))
        t = d2s.to_tensor(np.array([v]))
        np.testing.assert_array_equal(converted(t).numpy(), fn(t).numpy())


def _walrus_while_break(x, k):
    while (y := x * 2 + 1).sum() < k:
        x = y * 0.5
        if x.sum() > 3:
            break
    return x, y


def _walrus_while_return(x, k):
    while (y := x * 2 + 1).sum() < k:
        x = y * 0.5
        if x.sum() > 3:
            return x * 10, y
    return x, y


def _walrus_while_continue_break_else(x, k):
    n = x * 0
    while (y := x + 1).sum() < k:
        x = y
        if x.sum() > 2:
            n = n + 1
            continue
        if x.sum() > 100:
            break
    else:
        n = n - 100
    return x, y, n


_WALRUS_WHILE = [_walrus_while_break, _walrus_while_return, _walrus_while_continue_break_else]


@pytest.mark.parametrize("fn", _WALRUS_WHILE)
def test_walrus_in_while_test_with_break_or_return_in_the_body(fn, each_executor):
    # The break flag was folded as `not brk and (y := ...)`: the binding moved
    # into a lazy operand (a TypeError). Now the test runs as statements.
    sf = to_static(fn)
    for xv, kv in ((0.5, 20.0), (0.1, 100.0), (5.0, 1.0), (0.1, 8.0)):
        x, k = np.array([xv, xv]), np.array(kv)
        ref = fn(x, kv)  # numpy arrays and a float: the original as plain Python
        got, g_grads = outputs_and_grads(lambda x: sf(x, d2s.to_tensor(k)), x)
        want, e_grads = outputs_and_grads(lambda x: fn(x, d2s.to_tensor(k)), x)
        for g, w, r in zip(got, want, ref):
            np.testing.assert_allclose(g, w)
            np.testing.assert_allclose(g, r)
        np.testing.assert_allclose(g_grads[0], e_grads[0])
        converted = convert_function(fn)[0]
        for g, r in zip(converted(x, kv), ref):  # the converted code on Python values
            np.testing.assert_array_equal(g, r)
    assert "while" in op_types(sf, x, k)
