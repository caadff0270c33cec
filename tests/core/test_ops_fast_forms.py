"""The short forms some ops take for their common cases (d2s/core/ops:
einsum as one matmul, ...): the programs hold only the ops that compute
the result, and the values equal numpy's on the numpy and xla backends."""
import numpy as np
import pytest

import d2s
from d2s import static

R = np.random.default_rng(7)


def _op_types(fn, *arrays):
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data(f"x{i}", a.shape, a.dtype) for i, a in enumerate(arrays)]
        fn(*xs)
    return [op.type for op in prog.global_block().ops]


def _static_on_both_backends(fn, arrays, want):
    for backend in ("numpy", "xla"):
        got = d2s.jit.to_static(fn, backend=backend)(*[d2s.to_tensor(a) for a in arrays])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-9, err_msg=backend)


@pytest.mark.parametrize("equation,shapes,ops", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], ["matmul"]),
    ("bij,bjk->bik", [(1, 3, 4), (3, 4, 5)], ["matmul"]),  # batch dims broadcast
    ("ij,jk->ik", [(3, 4), (4, 2)], ["matmul"]),
    ("ij,jk", [(3, 4), (4, 2)], ["matmul"]),
    ("bhqd,bhdk->bhqk", [(1, 2, 3, 4), (1, 2, 4, 5)], ["matmul"]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)], ["matmul"]),
    # not matmul's own layout: a transpose first, still no reshapes
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)], ["transpose", "matmul"]),
    ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)], ["matmul", "transpose"]),
])
def test_einsum_of_a_matmul_is_one_matmul(equation, shapes, ops):
    arrays = [R.standard_normal(s) for s in shapes]
    fn = lambda a, b: d2s.einsum(equation, a, b)  # noqa: E731
    assert _op_types(fn, *arrays) == ops
    want = np.einsum(equation, *arrays)
    got = fn(*[d2s.to_tensor(a) for a in arrays])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-9)
    _static_on_both_backends(fn, arrays, want)
