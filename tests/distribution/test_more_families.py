"""StudentT, Chi2, ContinuousBernoulli against torch.distributions (values,
gradients, to_static on numpy and xla), their samples, and
ExponentialFamily's Bregman entropy against a closed form."""
import math
import os
import sys

import numpy as np
import pytest

import d2s
import d2s.distribution as D

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "core"))
from ops_check import check  # noqa: E402

torch = pytest.importorskip("torch")
td = torch.distributions

rng = np.random.default_rng(17)
DF = np.array([2.5, 3.0, 4.5, 7.0])
LOC = rng.standard_normal(4)
SCALE = rng.uniform(0.5, 2.0, 4)
CB_P = np.array([0.1, 0.4995, 0.5003, 0.8])  # two inside the Taylor band

CASES = {
    "StudentT": (D.StudentT, td.StudentT, [DF, LOC, SCALE], rng.standard_normal(4)),
    "Chi2": (D.Chi2, td.Chi2, [DF + 1.0], rng.uniform(0.2, 3.0, 4)),
    "ContinuousBernoulli": (D.ContinuousBernoulli, td.ContinuousBernoulli, [CB_P],
                            rng.uniform(0.05, 0.95, 4)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_densities_match_torch(name):
    cls, tcls, ps, value = CASES[name]
    n = len(ps)

    def fn(*args):
        d = cls(*args[:n])
        return d.log_prob(args[n]), d.entropy(), d.mean, d.variance

    def ref(*args):
        d = tcls(*[torch.tensor(a) for a in args[:n]], validate_args=False)
        return tuple(o.numpy() for o in (d.log_prob(torch.tensor(args[n])), d.entropy(),
                                         d.mean, d.variance))

    # the Taylor band's series and torch's agree to ~1e-10, not to the last digit
    check(fn, ps + [value], ref, onnx=False, rtol=1e-8, grad_rtol=1e-4)


def test_continuous_bernoulli_rsample_and_cdf_match_torch():
    d = D.ContinuousBernoulli(CB_P)
    t = td.ContinuousBernoulli(torch.tensor(CB_P))
    u = np.array([0.2, 0.5, 0.7, 0.95])
    np.testing.assert_allclose(d.icdf(u).numpy(), t.icdf(torch.tensor(u)).numpy(), rtol=1e-9)
    np.testing.assert_allclose(d.cdf(u).numpy(), t.cdf(torch.tensor(u)).numpy(), rtol=1e-9)
    d2s.seed(3)
    s = d.sample([20000]).numpy()
    assert ((s >= 0) & (s <= 1)).all()
    assert np.all(np.abs(s.mean(0) - d.mean.numpy()) <= 5 * np.sqrt(d.variance.numpy() / 20000))
    p = d2s.to_tensor(CB_P, stop_gradient=False)
    D.ContinuousBernoulli(p).rsample([8]).sum().backward()
    assert np.isfinite(p.grad.numpy()).all()


def test_student_t_sample_quantiles():
    d = D.StudentT(np.array([3.0, 10.0]), np.array([1.0, -2.0]), np.array([2.0, 0.5]))
    d2s.seed(4)
    s = d.sample([20000]).numpy()
    torch.manual_seed(0)
    ref = td.StudentT(torch.tensor([3.0, 10.0]), torch.tensor([1.0, -2.0]),
                      torch.tensor([2.0, 0.5])).sample((200000,)).numpy()
    q = [0.1, 0.5, 0.9]
    np.testing.assert_allclose(np.quantile(s, q, axis=0), np.quantile(ref, q, axis=0),
                               atol=0.06)
    df = d2s.to_tensor(np.array([3.0, 10.0]), stop_gradient=False)
    loc = d2s.to_tensor(np.array([1.0, -2.0]), stop_gradient=False)
    d2s.seed(5)
    D.StudentT(df, loc, 2.0).rsample([100]).mean(0).sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [1.0, 1.0])  # d E / d loc
    assert np.isfinite(df.grad.numpy()).all()
    heavy = D.StudentT(np.array([0.8, 1.5]), 0.0, 1.0)  # no mean below df 1, no variance below 2
    assert np.isnan(heavy.mean.numpy()[0]) and heavy.mean.numpy()[1] == 0.0
    assert np.isnan(heavy.variance.numpy()[0]) and np.isinf(heavy.variance.numpy()[1])


class _UnitNormal(D.ExponentialFamily):
    """N(mu, 1): theta = mu, F = theta**2 / 2, E[log h] = -(1 + mu**2) / 2 - log(2 pi) / 2."""

    def __init__(self, mu):
        self.mu = d2s.to_tensor(mu)
        super().__init__(tuple(self.mu.shape))

    @property
    def _natural_parameters(self):
        return (self.mu,)

    def _log_normalizer(self, theta):
        return 0.5 * theta * theta

    @property
    def _mean_carrier_measure(self):
        return -0.5 * (1.0 + self.mu * self.mu) - 0.5 * math.log(2 * math.pi)


def test_exponential_family_bregman_entropy():
    mu = np.array([0.0, 1.5, -2.0])
    got = _UnitNormal(mu).entropy().numpy()
    np.testing.assert_allclose(got, np.full(3, 0.5 * math.log(2 * math.pi * math.e)), rtol=1e-12)
