"""A variable both branches of a tensor `if` pass through unchanged: one
input of the `cond` op, and its gradient counted once (static == eager ==
numpy, on both executors).
"""

import numpy as np

from d2s import static
from d2s.jit import to_static

from model_code_helpers import outputs_and_grads, op_types


def _passes_y_through_an_if(x, y):
    # Found as `if t: for j in range(0): y = ...`: both branches hand out y as
    # it was, so `cond` listed y twice among its inputs and its gradient doubled.
    if x.sum() > 0:
        y = y
    return y * 3.0


def test_a_variable_both_branches_pass_through_gets_its_gradient_once(each_executor):
    sf = to_static(_passes_y_through_an_if)
    for xv in ([1.0, 2.0], [-1.0, -2.0]):
        x, y = np.array(xv), np.array([0.5, -1.5])
        (out,), (gx, gy) = outputs_and_grads(sf, x, y)
        np.testing.assert_array_equal(out, y * 3.0)
        np.testing.assert_array_equal(gy, [3.0, 3.0])  # d(sum(3y))/dy
        np.testing.assert_array_equal(gx, [0.0, 0.0])
        (e_out,), (e_gx, e_gy) = outputs_and_grads(_passes_y_through_an_if, x, y)
        np.testing.assert_array_equal(gy, e_gy)
    assert "cond" in op_types(sf, x, y)


def test_static_cond_of_one_variable_on_both_sides_has_one_input():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [2], "float64")
        y = static.data("y", [2], "float64")
        y.stop_gradient = False
        out = static.nn.cond(x.sum() > 0, lambda: y, lambda: y)
        gy, = static.gradients([(out * 2.0).sum()], [y])
    cond_op = next(op for op in prog.global_block().ops if op.type == "cond")
    assert sum(v is y for v in cond_op.inputs) == 1
    for xv in ([1.0, 1.0], [-1.0, -1.0]):
        got, = static.Executor().run(prog, feed={"x": np.array(xv), "y": np.ones(2)},
                                     fetch_list=[gy])
        np.testing.assert_array_equal(got, [2.0, 2.0])
