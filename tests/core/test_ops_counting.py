"""bincount, nonzero / where(cond), add_n, var (d2s/core/ops/counting.py):
values vs numpy, gradients, numpy+xla static, unknown dims, ONNX Runtime.
bincount and nonzero have data-dependent lengths: the xla backend runs them
on numpy after its warning."""
import numpy as np
import pytest

import d2s
from d2s.static.backend import BackendFallbackWarning
from ops_check import check

R = np.random.default_rng(12)


def f64(*s):
    return R.standard_normal(s)


CASES = [
    ("add_n", lambda a, b, c: d2s.add_n([a, b, c]), [f64(2, 3), f64(3), f64(2, 3)],
     lambda a, b, c: a + b + c, {}),
    ("var", lambda x: d2s.var(x, axis=1), [f64(3, 4)], lambda x: np.var(x, 1, ddof=1), {}),
    ("var_method_biased_keepdim", lambda x: x.var(axis=[0, 1], unbiased=False, keepdim=True),
     [f64(2, 3, 2)], lambda x: np.var(x, (0, 1), keepdims=True), {}),
    ("var_all_int", lambda x: d2s.var(x), [np.arange(6)],
     lambda x: np.float32(np.var(x, ddof=1)), {}),
    ("bincount", lambda x: d2s.bincount(x), [np.array([1, 3, 3, 0, 5])], np.bincount,
     dict(xla=False)),
    ("bincount_weights_minlength", lambda x, w: d2s.bincount(x, w, minlength=8),
     [np.array([1, 3, 3, 0]), f64(4)], lambda x, w: np.bincount(x, w, 8), dict(xla=False)),
    ("nonzero", lambda x: d2s.nonzero(x), [np.array([[0, 2, 0], [1, 0, 3]])], np.argwhere,
     dict(xla=False)),
    ("where_one_arg", lambda x: d2s.where(x > 0.5), [f64(3, 4)],
     lambda x: np.nonzero(x > 0.5), dict(xla=False)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_counting_op(case):
    name, fn, arrays, ref, options = case
    check(fn, arrays, ref, **options)


def test_data_dependent_lengths_fall_back_to_numpy_on_xla():
    x = np.array([1, 3, 3, 0, 5])
    sf = d2s.jit.to_static(lambda t: d2s.bincount(t) + 0, backend="xla")
    with pytest.warns(BackendFallbackWarning):
        out = sf(d2s.to_tensor(x))
    np.testing.assert_array_equal(out.numpy(), np.bincount(x))


def test_bad_input():
    with pytest.raises(ValueError, match="non-negative"):
        d2s.bincount(d2s.to_tensor(np.array([1, -1])))
    with pytest.raises(TypeError, match="integer"):
        d2s.bincount(d2s.to_tensor(f64(3)))
    with pytest.raises(ValueError, match="1-D"):
        d2s.bincount(d2s.to_tensor(np.zeros((2, 2), np.int64)))
    with pytest.raises(TypeError, match="both x and y"):
        d2s.where(d2s.to_tensor(np.array([True])), 1.0)
    assert d2s.bincount(d2s.to_tensor(np.zeros(0, np.int64)), minlength=3).numpy().tolist() == \
        [0, 0, 0]
