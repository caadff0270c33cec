"""matmul(transpose_x=, transpose_y=), mm, bmm, einsum
(d2s/core/ops/linalg_more.py): values vs numpy, gradients, numpy+xla static,
unknown dims, ONNX Runtime; bad input."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(3)


def f64(*s):
    return R.standard_normal(s)


def _t(x):
    return np.swapaxes(x, -1, -2) if x.ndim > 1 else x


CASES = [
    ("matmul_tx", lambda x, y: d2s.matmul(x, y, transpose_x=True), [f64(4, 3), f64(4, 2)],
     lambda x, y: _t(x) @ y),
    ("matmul_ty_batch", lambda x, y: d2s.matmul(x, y, transpose_y=True), [f64(2, 3, 4), f64(5, 4)],
     lambda x, y: x @ _t(y)),
    ("matmul_both", lambda x, y: x.matmul(y, transpose_x=True, transpose_y=True),
     [f64(2, 4, 3), f64(2, 5, 4)], lambda x, y: _t(x) @ _t(y)),
    ("matmul_vector_flag_ignored", lambda x, y: d2s.matmul(x, y, transpose_x=True),
     [f64(3), f64(3, 2)], lambda x, y: x @ y),
    ("matmul_int", lambda x, y: d2s.matmul(x, y, transpose_y=True),
     [np.arange(6).reshape(2, 3), np.arange(6).reshape(2, 3)], lambda x, y: x @ y.T),
    ("mm", d2s.mm, [f64(2, 3), f64(3, 4)], np.matmul),
    ("bmm", d2s.bmm, [f64(2, 3, 4), f64(2, 4, 2)], np.matmul),
    ("einsum_batch_matmul", lambda a, b: d2s.einsum("bij,bjk->bik", a, b),
     [f64(2, 3, 4), f64(2, 4, 5)], lambda a, b: np.einsum("bij,bjk->bik", a, b)),
    ("einsum_implicit", lambda a, b: d2s.einsum("ij,jk", a, b), [f64(2, 3), f64(3, 2)],
     lambda a, b: np.einsum("ij,jk", a, b)),
    ("einsum_outer", lambda a, b: d2s.einsum("i,j->ij", a, b), [f64(3), f64(4)], np.outer),
    ("einsum_dot", lambda a, b: d2s.einsum("i,i->", a, b), [f64(5), f64(5)], np.dot),
    ("einsum_sum_transpose", lambda a: d2s.einsum("bij->jb", a), [f64(2, 3, 4)],
     lambda a: np.einsum("bij->jb", a)),
    ("einsum_ellipsis", lambda a, b: d2s.einsum("...ij,...jk->...ik", a, b),
     [f64(2, 2, 3), f64(2, 3, 2)], lambda a, b: np.einsum("...ij,...jk->...ik", a, b)),
    ("einsum_three", lambda a, b, c: d2s.einsum("bij,bjk,k->bi", a, b, c),
     [f64(2, 3, 4), f64(2, 4, 5), f64(5)], lambda a, b, c: np.einsum("bij,bjk,k->bi", a, b, c)),
    ("einsum_attention", lambda q, k: d2s.einsum("bhqd,bhkd->bhqk", q, k),
     [f64(1, 2, 3, 4), f64(1, 2, 5, 4)], lambda q, k: np.einsum("bhqd,bhkd->bhqk", q, k)),
    ("inverse", lambda x: d2s.inverse(x) * 1.0, [f64(2, 3, 3) + 3 * np.eye(3)], np.linalg.inv),
    ("linalg_inv_int", lambda x: d2s.linalg.inv(x), [np.array([[2, 1], [1, 1]])], np.linalg.inv),
    ("einsum_empty", lambda a, b, c: (d2s.einsum("ij,jk->ik", a, b),
                                      d2s.einsum("ji,jk->ik", c, b)),
     [np.zeros((2, 0)), np.zeros((0, 3)), np.zeros((0, 2))],
     lambda a, b, c: (np.einsum("ij,jk->ik", a, b), np.einsum("ji,jk->ik", c, b)),
     dict(grad=False)),
    ("einsum_list_operands", lambda a, b: d2s.einsum("ij,ij->i", [a, b]),
     [f64(2, 3), f64(2, 3)], lambda a, b: np.einsum("ij,ij->i", a, b)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_linalg_op(case):
    name, fn, arrays, ref, *options = case
    check(fn, arrays, ref, unknown="first", onnx="inv" not in name,
          **(options[0] if options else {}))


def test_inverse_of_a_singular_matrix_raises_on_every_backend():
    x = d2s.to_tensor(np.ones((2, 2)))
    with pytest.raises(np.linalg.LinAlgError):
        d2s.inverse(x)
    for backend in ("numpy", "xla"):
        with pytest.raises(np.linalg.LinAlgError):
            d2s.jit.to_static(lambda t: d2s.inverse(t), backend=backend)(x)


@pytest.mark.parametrize("call,error,match", [
    (lambda a: d2s.bmm(a, a[0]), ValueError, "3-D"),
    (lambda a: d2s.bmm(a, d2s.to_tensor(f64(3, 4, 2))), ValueError, "batch sizes differ"),
    (lambda a: d2s.einsum("ii->i", a[0]), NotImplementedError, "diagonal"),
    (lambda a: d2s.einsum("ij,jk->ik", a), ValueError, "names 2 operands"),
    (lambda a: d2s.einsum("ij->ij", a), ValueError, "do not fit"),
    (lambda a: d2s.einsum("bij->bz", a), ValueError, "names no operand dim"),
    (lambda a: d2s.inverse(a[0, 0]), ValueError, "at least 2-D"),
    (lambda a: d2s.inverse(d2s.to_tensor(f64(2, 3))), ValueError, "square"),
    (lambda a: d2s.matmul(d2s.to_tensor(f64(3, 4)), d2s.to_tensor(f64(4, 2)), transpose_x=True),
     ValueError, "matmul"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call(d2s.to_tensor(f64(2, 3, 3)))
