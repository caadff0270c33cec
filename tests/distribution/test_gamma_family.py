"""Gamma, Beta, Dirichlet: log_prob, entropy, mean, variance against
torch.distributions (gradients, to_static on numpy and xla), the composite
Gamma sampler's moments (small and large shapes), and rsample's clear error."""
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

rng = np.random.default_rng(9)
A = np.array([0.3, 1.0, 4.5])
B = np.array([2.0, 0.7, 1.5])


def _torch(name, *ps):
    return {"Gamma": td.Gamma, "Beta": td.Beta, "Dirichlet": td.Dirichlet}[name](
        *[torch.tensor(p) for p in ps], validate_args=False)


CASES = {
    "Gamma": (D.Gamma, [A, B], rng.uniform(0.2, 3.0, 3)),
    "Beta": (D.Beta, [A, B], rng.uniform(0.1, 0.9, 3)),
    "Dirichlet": (D.Dirichlet, [np.stack([A, B])], np.array([[0.2, 0.3, 0.5],
                                                              [0.6, 0.3, 0.1]])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_densities_match_torch(name):
    cls, ps, value = CASES[name]
    n = len(ps)

    def fn(*args):
        d = cls(*args[:n])
        return d.log_prob(args[n]), d.entropy(), d.mean, d.variance

    def ref(*args):
        d = _torch(name, *args[:n])
        return tuple(o.numpy() for o in (d.log_prob(torch.tensor(args[n])), d.entropy(),
                                         d.mean, d.variance))

    check(fn, ps + [value], ref, onnx=False, rtol=1e-6, grad_rtol=1e-4)


@pytest.mark.parametrize("name", sorted(CASES))
def test_sample_moments(name):
    cls, ps, _ = CASES[name]
    d = cls(*ps)
    d2s.seed(6)
    s = d.sample([20000]).numpy().astype(np.float64)
    assert s.shape == (20000,) + tuple(np.shape(d.mean.numpy()))
    mean, var = d.mean.numpy(), d.variance.numpy()
    assert np.all(np.abs(s.mean(0) - mean) <= 5 * np.sqrt(var / 20000)), (s.mean(0), mean)
    np.testing.assert_allclose(s.var(0), var, rtol=0.1)
    assert np.all(s > 0)
    if name == "Dirichlet":
        np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-6)


def test_gamma_sampler_distribution_matches_torch_quantiles():
    """Beyond the moments: the quantiles of the draws against torch's icdf-free
    reference (a large torch sample with its own generator)."""
    conc = np.array([0.05, 0.5, 1.0, 30.0])
    d2s.seed(8)
    s = D.Gamma(conc, 1.0).sample([20000]).numpy()
    torch.manual_seed(0)
    ref = td.Gamma(torch.tensor(conc), torch.tensor(1.0)).sample((200000,)).numpy()
    q = [0.1, 0.5, 0.9]
    got, want = np.quantile(s, q, axis=0), np.quantile(ref, q, axis=0)
    np.testing.assert_allclose(got, want, rtol=0.06, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rsample_raises_clear_error(name):
    cls, ps, _ = CASES[name]
    with pytest.raises(NotImplementedError, match="use sample"):
        cls(*ps).rsample([2])
