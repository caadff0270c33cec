"""any / all / logsumexp / prod (d2s/core/ops/reduce_more.py): values vs
numpy (empty reductions, bools, ints, keepdim, negative axes), gradients,
numpy+xla static, unknown dims, ONNX Runtime."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(11)


def f64(*s):
    return R.uniform(0.5, 1.5, size=s) * R.choice([-1.0, 1.0], size=s)


def _lse(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


CASES = [
    ("any", lambda x: d2s.any(x > 1.0, axis=1), [f64(3, 4)], lambda x: np.any(x > 1.0, 1)),
    ("all_keepdim", lambda x: (x > -1.4).all(axis=-1, keepdim=True), [f64(3, 4)],
     lambda x: np.all(x > -1.4, -1, keepdims=True)),
    ("any_all_ints", lambda x: (d2s.any(x), d2s.all(x)), [np.array([[0, 2], [0, 0]])],
     lambda x: (np.any(x), np.all(x))),
    ("any_all_empty", lambda x: (d2s.any(x, 0), d2s.all(x, 0)), [np.zeros((0, 2), bool)],
     lambda x: (np.any(x, 0), np.all(x, 0))),
    ("logsumexp", lambda x: d2s.logsumexp(x, axis=1), [f64(3, 4) * 30],
     lambda x: _lse(x, 1)),
    ("logsumexp_all_keepdim", lambda x: x.logsumexp(keepdim=True), [f64(2, 3)],
     lambda x: _lse(x, None, True)),
    ("logsumexp_axes", lambda x: d2s.logsumexp(x, axis=[0, -1]), [f64(2, 3, 2)],
     lambda x: _lse(x, (0, 2))),
    ("prod", lambda x: d2s.prod(x, axis=-1), [f64(3, 4)], lambda x: np.prod(x, -1)),
    ("prod_method_keepdim", lambda x: x.prod(axis=0, keepdim=True), [f64(3, 2)],
     lambda x: np.prod(x, 0, keepdims=True)),
    ("prod_int32_dtype", lambda x: (d2s.prod(x), d2s.prod(x, dtype="float64")),
     [np.array([1, -2, 3], np.int32)], lambda x: (np.prod(x), np.prod(x.astype(np.float64)))),
]


@pytest.mark.filterwarnings("ignore:divide by zero")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_reduce_op(case):
    name, fn, arrays, ref = case
    check(fn, arrays, ref)


def test_logsumexp_of_all_minus_inf_and_large_values():
    x = np.array([[-np.inf, -np.inf], [1000.0, 1000.0]])
    with np.errstate(divide="ignore"):
        got = d2s.logsumexp(d2s.to_tensor(x), axis=1).numpy()
    np.testing.assert_allclose(got, [-np.inf, 1000.0 + np.log(2.0)])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # (the nan is the point)
def test_prod_gradient_at_a_zero_is_nan_not_wrong():
    x = d2s.to_tensor(np.array([2.0, 0.0, 3.0]), stop_gradient=False)
    d2s.prod(x).backward()
    assert np.isnan(x.grad.numpy()[1])
    np.testing.assert_allclose(x.grad.numpy()[[0, 2]], [0.0, 0.0])


def test_bad_axis():
    with pytest.raises(ValueError, match="out of range"):
        d2s.any(d2s.to_tensor(np.ones((2, 2), bool)), axis=2)
