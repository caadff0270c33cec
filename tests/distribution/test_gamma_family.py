"""Gamma, Beta, Dirichlet: log_prob, entropy, mean, variance against
torch.distributions (gradients, to_static on numpy and xla), the composite
Gamma sampler's moments and quantiles, and rsample's implicit gradients
(expectations in closed form; eager vs to_static on numpy and xla)."""
import os
import sys
import warnings

import numpy as np
import pytest

import d2s
import d2s.distribution as D
from d2s.static.backend import BackendFallbackWarning

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


def test_rsample_gradients_of_expectations():
    """Implicit reparameterization: the mean over many draws of d(draw)/d(param)
    estimates d E[draw] / d(param), known in closed form."""
    a = d2s.to_tensor(A, stop_gradient=False)
    b = d2s.to_tensor(B, stop_gradient=False)
    d2s.seed(12)
    x = D.Gamma(a, b).rsample([20000])
    (x * x).mean(0).sum().backward()  # E[x^2] = a (a + 1) / b^2
    np.testing.assert_allclose(a.grad.numpy(), (2 * A + 1) / B ** 2, rtol=0.05)
    np.testing.assert_allclose(b.grad.numpy(), -2 * A * (A + 1) / B ** 3, rtol=0.05)
    a.clear_gradient()
    b.clear_gradient()
    d2s.seed(13)
    D.Beta(a, b).rsample([20000]).mean(0).sum().backward()  # E = a / (a + b)
    np.testing.assert_allclose(a.grad.numpy(), B / (A + B) ** 2, rtol=0.05)
    np.testing.assert_allclose(b.grad.numpy(), -A / (A + B) ** 2, rtol=0.05)
    c = d2s.to_tensor(np.array([0.5, 2.0, 3.0]), stop_gradient=False)
    d2s.seed(14)
    D.Dirichlet(c).rsample([20000]).mean(0)[0].backward()  # E[x0] = c0 / sum(c)
    c0 = c.numpy().sum()
    want = -np.full(3, 0.5) / c0 ** 2
    want[0] += 1.0 / c0
    np.testing.assert_allclose(c.grad.numpy(), want, rtol=0.05, atol=2e-3)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_rsample_in_converted_code_equals_eager(backend):
    """A Beta-distributed gate trained by its pathwise gradient: eager and
    to_static give the same draws and gradients (seeded alike)."""
    def loss(a, b):
        g = D.Beta(d2s.exp(a), d2s.exp(b)).rsample([3])
        return ((g - 0.25) ** 2).mean()

    def run(f):
        ta = d2s.to_tensor(np.array([0.1, 0.5], "float32"), stop_gradient=False)
        tb = d2s.to_tensor(np.array([0.3, -0.2], "float32"), stop_gradient=False)
        d2s.seed(3)
        out = f(ta, tb)
        out.backward()
        return out.numpy(), ta.grad.numpy(), tb.grad.numpy()

    want = run(loss)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        got = run(d2s.jit.to_static(loss, backend=backend))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
