"""Tensor methods and attributes that PaddlePaddle model code calls, eagerly
and in converted code (numpy and xla): `x.size` of a tensor whose dims are
known only at run time (PaddlePaddle's test reshapes by `paddle.shape(x)`),
and the method forms of d2s functions (`x.numel()`, `x.t()`, `x.std()`,
`x.not_equal(y)`, `x.masked_select(m)`, ...). Expected values come from
numpy."""
import os
import sys

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import InputSpec

from harness import BACKENDS

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "jit"))
from model_code_helpers import assert_same_run, tensor  # noqa: E402


def _size_after_dynamic_reshape(x):
    x = d2s.reshape(x, d2s.shape(x))   # every dim unknown while building
    return x.size, x * x.size, x.mean() * x.numel()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("spec", [None, [InputSpec([None, 3])]])
def test_size_of_a_tensor_with_run_time_dims(backend, spec):
    static = to_static(_size_after_dynamic_reshape, backend=backend, input_spec=spec)
    for rows in ((1, 4) if spec else (2,)):
        values = np.arange(rows * 3, dtype="float32").reshape(rows, 3)
        out = assert_same_run(static, _size_after_dynamic_reshape, lambda: (tensor(values, grad=True),))
        assert int(out[0]) == rows * 3
        assert out[1].dtype == np.float32   # the size stands for a Python int: weak


# masked_select's result shape depends on the mask: on xla its program runs on
# numpy, with a warning saying so (expected here)
pytestmark = pytest.mark.filterwarnings("ignore:.*indexing with a bool mask")

X = np.array([[1.5, -2.0, 0.5], [3.0, 0.25, -1.0]], dtype="float32")
CASES = {
    "numel": (lambda x: x.numel(), lambda a: np.array(a.size)),
    "dim": (lambda x: x * x.dim() + x.ndimension(), lambda a: a * 2 + 2),
    "t": (lambda x: x.t(), lambda a: a.T),
    "std": (lambda x: x.std(axis=1), lambda a: a.std(axis=1, ddof=1)),
    "mm": (lambda x: x.mm(x.t()), lambda a: a @ a.T),
    "bmm": (lambda x: x.unsqueeze(0).bmm(x.t().unsqueeze(0)), lambda a: (a @ a.T)[None]),
    "compare": (lambda x: (x.not_equal(x * 0 + 0.5), x.greater_than(x * 0), x.less_equal(x * 0)),
                lambda a: (a != 0.5, a > 0, a <= 0)),
    "logical": (lambda x: (x > 0).logical_and(x < 2).logical_or((x > 2).logical_not()),
                lambda a: ((a > 0) & (a < 2)) | ~(a > 2)),
    "unary": (lambda x: (x.abs().reciprocal(), x.abs().log2(), x.abs().log10(), x.expm1(),
                         x.neg(), x.trunc()),
              lambda a: (1 / np.abs(a), np.log2(np.abs(a)), np.log10(np.abs(a)), np.expm1(a),
                         -a, np.trunc(a))),
    "gather_nd": (lambda x: x.gather_nd(d2s.to_tensor([[0, 1], [1, 2]])), lambda a: a[[0, 1], [1, 2]]),
    "masked_select": (lambda x: x.masked_select(x > 0).sum(), lambda a: a[a > 0].sum()),
    "scatter": (lambda x: x.scatter(d2s.to_tensor([1]), x[:1] * 10),
                lambda a: np.stack([a[0], a[0] * 10])),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_method_forms_match_numpy(backend, name):
    fn, ref = CASES[name]
    expected = ref(X)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for run in (fn, to_static(fn, backend=backend)):
        out = run(d2s.to_tensor(X))
        out = out if isinstance(out, tuple) else (out,)
        for got, want in zip(out, expected):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_t_of_more_than_two_dims_is_a_clear_error():
    with pytest.raises(ValueError, match="at most 2 dims"):
        d2s.ones([2, 2, 2]).t()
