"""A Python number returned from inside a tensor loop and promoted by a later
`return` of a tensor: one dtype on every path, as eagerly; on Python values
the number stays a Python number.
"""

import numpy as np

import d2s
from d2s.convert.api import convert_function
from d2s.jit import to_static


def _ops(sf, *arrays):
    prog = sf.get_concrete_program(*(d2s.to_tensor(a) for a in arrays)).main_program
    return {op.type for op in prog.all_ops()}


def _number_returned_from_a_loop_then_promoted(x, n):
    for i in range(n):
        if x.sum() < 0:
            return x * 2, 1
    if x.sum() > 0:
        return x * 3, x.sum()
    return x * 4, x.mean()


def test_python_number_returned_from_a_loop_and_promoted_by_a_later_return(each_executor):
    # The path passing the loop's (weak int64) number on casts it to float64;
    # that cast of the still-undefined value raised NameError when the loop had
    # not returned. A cast is no read: it stays undefined (`cast_if_defined`).
    sf = to_static(_number_returned_from_a_loop_then_promoted)
    for xv in ([1.0, -1.0], [1.0, 2.0], [-1.0, -2.0]):
        for nv in (0, 2):
            x = np.array(xv)
            got = sf(d2s.to_tensor(x), d2s.to_tensor(np.array(nv)))
            want = _number_returned_from_a_loop_then_promoted(d2s.to_tensor(x), nv)
            np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
            assert got[0].dtype == want[0].dtype == np.float64
            # eager returns the Python int 1 (static: float64, the branch-output rule)
            assert float(got[1]) == float(want[1]) and got[1].dtype == np.float64
            ref = (x * 2, 1) if nv and x.sum() < 0 else \
                (x * 3, x.sum()) if x.sum() > 0 else (x * 4, x.mean())
            np.testing.assert_array_equal(got[0].numpy(), ref[0])
            assert float(got[1]) == ref[1]
    assert {"while", "cond", "cast_if_defined"} <= _ops(sf, x, np.array(2))


def test_the_promoted_number_keeps_python_semantics_on_python_values():
    converted = convert_function(_number_returned_from_a_loop_then_promoted)[0]
    for xv in ([1.0, -1.0], [1.0, 2.0], [-1.0, -2.0]):
        for nv in (0, 2):
            x = np.array(xv)
            got = converted(x, nv)
            want = _number_returned_from_a_loop_then_promoted(x, nv)
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1] == want[1] and type(got[1]) is type(want[1])
