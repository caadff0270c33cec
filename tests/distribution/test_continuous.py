"""Normal, LogNormal, Uniform, Laplace, Gumbel, Cauchy, Exponential: log_prob,
entropy, mean and variance against torch.distributions (float64), with
finite-difference gradients and to_static on numpy and xla (ops_check);
sample moments; rsample gradients by finite differences of seeded draws."""
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

rng = np.random.default_rng(7)
LOC = rng.standard_normal(3)
SCALE = rng.uniform(0.5, 2.0, 3)
POS = rng.uniform(0.2, 3.0, 3)

# name: (d2s class, torch class, parameter arrays, values, has mean/variance, ONNX)
FAMILIES = {
    "Normal": (D.Normal, td.Normal, [LOC, SCALE], rng.standard_normal(3), True, True),
    "LogNormal": (D.LogNormal, td.LogNormal, [LOC, SCALE], POS, True, True),
    "Uniform": (D.Uniform, td.Uniform, [LOC, LOC + SCALE], LOC + 0.5 * SCALE, True, True),
    "Laplace": (D.Laplace, td.Laplace, [LOC, SCALE], rng.standard_normal(3), True, True),
    "Gumbel": (D.Gumbel, td.Gumbel, [LOC, SCALE], rng.standard_normal(3), True, True),
    "Cauchy": (D.Cauchy, td.Cauchy, [LOC, SCALE], rng.standard_normal(3), False, True),
    "Exponential": (D.Exponential, td.Exponential, [SCALE], POS, True, True),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_densities_match_torch(name):
    cls, tcls, ps, value, moments, onnx = FAMILIES[name]
    n = len(ps)

    def fn(*args):
        d = cls(*args[:n])
        outs = [d.log_prob(args[n]), d.entropy() + d2s.zeros_like(args[n])]
        if moments:
            outs += [d.mean + d2s.zeros_like(args[n]), d.variance + d2s.zeros_like(args[n])]
        return tuple(outs)

    def ref(*args):
        d = tcls(*[torch.tensor(a) for a in args[:n]], validate_args=False)
        outs = [d.log_prob(torch.tensor(args[n])), d.entropy()]
        if moments:
            outs += [d.mean, d.variance]
        return tuple(np.broadcast_to(o.numpy(), args[n].shape) for o in outs)

    check(fn, ps + [value], ref, onnx=onnx, rtol=1e-6, grad_rtol=1e-4)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_sample_moments(name):
    cls, _, ps, _, moments, _ = FAMILIES[name]
    d = cls(*[p[:2] for p in ps])
    d2s.seed(3)
    s = d.sample([20000]).numpy().astype(np.float64)
    assert s.shape == (20000, 2)
    if not moments:  # Cauchy: the median and the quartiles (loc +- scale)
        q = np.quantile(s, [0.25, 0.5, 0.75], axis=0)
        np.testing.assert_allclose(q[1], ps[0][:2], atol=0.06 * ps[1][:2].max())
        np.testing.assert_allclose(q[2] - q[0], 2 * ps[1][:2], rtol=0.05)
        return
    mean, var = d.mean.numpy(), d.variance.numpy()
    se = np.sqrt(var / 20000)
    assert np.all(np.abs(s.mean(0) - mean) <= 5 * se), (s.mean(0), mean, se)
    np.testing.assert_allclose(s.var(0), var, rtol=0.15 if name == "LogNormal" else 0.06)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_rsample_gradient_by_finite_differences(name):
    cls, _, ps, _, _, _ = FAMILIES[name]
    w = np.linspace(-1.0, 1.0, 12).reshape(4, 3)

    def f(arrays, grad=False):
        ts = [d2s.to_tensor(a, stop_gradient=not grad) for a in arrays]
        d2s.seed(11)
        loss = d2s.sum(cls(*ts).rsample([4]) * d2s.to_tensor(w))
        if grad:
            loss.backward()
            return [t.grad.numpy() for t in ts]
        return float(loss.numpy())

    got = f(ps, grad=True)
    eps = 1e-6
    for i, p in enumerate(ps):
        fd = np.zeros_like(p)
        for j in range(p.size):
            up = [a.copy() for a in ps]
            dn = [a.copy() for a in ps]
            up[i][j] += eps
            dn[i][j] -= eps
            fd[j] = (f(up) - f(dn)) / (2 * eps)
        np.testing.assert_allclose(got[i], fd, rtol=1e-4, atol=1e-6)


def test_sample_has_no_gradient_and_python_numbers_are_float32():
    loc = d2s.to_tensor(np.zeros(2), stop_gradient=False)
    assert D.Normal(loc, 1.0).sample([3]).stop_gradient
    d = D.Normal(0.0, 1.0)
    assert d.loc.dtype == np.float32 and d.sample([2]).dtype == np.float32
    assert d.batch_shape == () and d.event_shape == ()
    assert D.Normal(np.zeros((2, 3)), 1.0).batch_shape == (2, 3)
    with pytest.raises(ValueError, match="no mean"):
        D.Cauchy(0.0, 1.0).mean


def test_cdf_icdf_match_torch():
    x = rng.standard_normal(3)
    n = D.Normal(LOC, SCALE)
    tn = td.Normal(torch.tensor(LOC), torch.tensor(SCALE))
    np.testing.assert_allclose(n.cdf(x).numpy(), tn.cdf(torch.tensor(x)).numpy(), rtol=1e-6)
    u = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(n.icdf(u).numpy(), tn.icdf(torch.tensor(u)).numpy(), rtol=1e-6)
    tu, tx = torch.tensor(u), torch.tensor(np.abs(x))
    tloc, tscale = torch.tensor(LOC), torch.tensor(SCALE)
    for ours, theirs in [(D.Laplace(LOC, SCALE), td.Laplace(tloc, tscale)),
                         (D.Cauchy(LOC, SCALE), td.Cauchy(tloc, tscale)),
                         (D.Exponential(SCALE), td.Exponential(tscale))]:
        np.testing.assert_allclose(ours.cdf(np.abs(x)).numpy(), theirs.cdf(tx).numpy(), rtol=1e-6)
        np.testing.assert_allclose(ours.icdf(u).numpy(), theirs.icdf(tu).numpy(), rtol=1e-6)
    g = D.Gumbel(LOC, SCALE)
    np.testing.assert_allclose(g.cdf(g.icdf(u)).numpy(), u, rtol=1e-12)
    tg = td.Gumbel(torch.tensor(LOC), torch.tensor(SCALE))
    np.testing.assert_allclose(g.cdf(x).numpy(), tg.cdf(torch.tensor(x)).numpy(), rtol=1e-6)


def test_normal_matches_paddle_documented_values():
    """python/paddle/distribution/normal.py's example."""
    a, b = D.Normal([0.0], [1.0]), D.Normal([0.5], [2.0])
    v = d2s.to_tensor([0.8], dtype="float32")
    np.testing.assert_allclose(a.entropy().numpy(), [1.41893852], rtol=1e-6)
    np.testing.assert_allclose(a.log_prob(v).numpy(), [-1.23893857], rtol=1e-6)
    np.testing.assert_allclose(a.probs(v).numpy(), [0.28969154], rtol=1e-6)
    np.testing.assert_allclose(a.kl_divergence(b).numpy(), [0.34939718], rtol=1e-6)
    assert tuple(a.sample([2]).shape) == (2, 1)


@pytest.mark.parametrize("make, message", [
    (lambda: D.Normal(0.0, -1.0), "Normal: scale must be positive, got -1.0"),
    (lambda: D.Uniform(2.0, 1.0), "Uniform: high - low must be positive"),
    (lambda: D.Bernoulli([0.2, 1.5]),
     r"Bernoulli: probs must be in \[0, 1\], got 1.5 at index \[1\]"),
    (lambda: D.Gamma([1.0, 0.0], 1.0), "Gamma: concentration must be positive"),
    (lambda: D.Binomial(2.5, 0.3), "Binomial: total_count must be a non-negative integer"),
    (lambda: D.Chi2(-1.0), "Chi2: df must be positive"),
])
def test_invalid_eager_parameters_raise(make, message):
    with pytest.raises(ValueError, match=message):
        make()
