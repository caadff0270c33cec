"""poisson, standard_normal, randint_like (d2s/core/ops/random_extra.py,
issue 25): shapes, dtypes, ranges, moments of many draws, and the same
numbers from eager and to_static under the same seed."""
import warnings

import numpy as np
import pytest

import d2s


def test_poisson_moments_dtype_and_zero_gradient():
    rates = np.array([[0.0, 0.5, 3.0, 20.0]] * 1500)
    x = d2s.to_tensor(rates, stop_gradient=False)
    d2s.seed(5)
    s = d2s.poisson(x)
    assert s.dtype == np.float64 and tuple(s.shape) == rates.shape
    v = s.numpy()
    assert (v == np.round(v)).all() and (v[:, 0] == 0).all()
    np.testing.assert_allclose(v.mean(0)[1:], [0.5, 3.0, 20.0], rtol=0.08)
    np.testing.assert_allclose(v.var(0)[1:], [0.5, 3.0, 20.0], rtol=0.15)
    s.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(rates))
    assert d2s.poisson(d2s.to_tensor(np.ones(3, np.float32))).dtype == np.float32


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_poisson_static_numbers_equal_eager(backend):
    rates = d2s.to_tensor(np.array([[0.0, 1.0, 4.0], [9.0, 900.0, 0.25]]))
    d2s.seed(11)
    eager = d2s.poisson(rates).numpy()
    d2s.seed(11)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        static = d2s.jit.to_static(lambda r: d2s.poisson(r), backend=backend)(rates).numpy()
    np.testing.assert_array_equal(static, eager)
    assert eager[0, 0] == 0 and abs(eager[1, 1] - 900) < 150  # (exp(-900) alone underflows)


def test_poisson_icdf_against_the_distribution():
    """The inverse CDF at u is the smallest k with CDF(k) >= u."""
    from math import exp, factorial
    lam = 2.5
    cdf = np.cumsum([exp(-lam) * lam ** k / factorial(k) for k in range(30)])
    u = np.array([0.0, cdf[0] - 1e-9, cdf[0] + 1e-9, cdf[3] + 1e-9, 0.999999, 1 - 1e-17])
    from d2s.core.registry import OPS
    got = OPS["poisson_icdf"].kernel(np.full(u.shape, lam), u)
    want = [int(np.searchsorted(cdf, v)) for v in u[:-1]]
    np.testing.assert_array_equal(got[:-1], want)
    assert got[-1] >= want[-1]  # u within a rounding of 1 stops past the mode, never loops


def test_poisson_bad_rates():
    with pytest.raises(TypeError, match="float"):
        d2s.poisson(d2s.to_tensor([1, 2]))
    with pytest.raises(ValueError, match="non-negative"):
        d2s.poisson(d2s.to_tensor([-1.0]))


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_standard_normal_and_randint_like(backend):
    def fn(x):
        return d2s.standard_normal([400, 5]), d2s.randint_like(x, 3, 7), \
            d2s.randint_like(x, 4, dtype="int32")
    x = d2s.to_tensor(np.zeros((300, 4), np.int64))
    d2s.seed(3)
    e = [t.numpy() for t in fn(x)]
    d2s.seed(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = [t.numpy() for t in d2s.jit.to_static(fn, backend=backend)(x)]
    for a, b in zip(e, s):
        np.testing.assert_array_equal(a, b)
    n, r, r32 = e
    assert n.dtype == np.float32 and abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1
    assert r.dtype == np.int64 and r.shape == (300, 4) and set(np.unique(r)) == {3, 4, 5, 6}
    assert r32.dtype == np.int32 and set(np.unique(r32)) == {0, 1, 2, 3}
    assert d2s.standard_normal([2], "float64").dtype == np.float64
