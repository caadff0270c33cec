"""kl_divergence's closed forms against torch.distributions.kl_divergence
(values and gradients, to_static on numpy and xla), and register_kl's
dispatch: the most specific registered pair wins; a missing pair raises."""
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

rng = np.random.default_rng(11)
R = rng.standard_normal(3)
POS1, POS2 = rng.uniform(0.5, 2.0, 3), rng.uniform(0.5, 2.0, 3)
P1, P2 = rng.uniform(0.1, 0.9, 3), rng.uniform(0.1, 0.9, 3)
_M = rng.standard_normal((2, 3, 3))
COV = _M @ _M.transpose(0, 2, 1) + 2 * np.eye(3)
TRIL = np.linalg.cholesky(COV)

# name: (d2s ctor, torch ctor, p's arrays, q's arrays, ONNX)
PAIRS = {
    "Normal": (D.Normal, td.Normal, [R, POS1], [R[::-1].copy(), POS2], True),
    "LogNormal": (D.LogNormal, td.LogNormal, [R, POS1], [R * 0.5, POS2], True),
    "Uniform": (D.Uniform, td.Uniform, [R, R + POS1], [R - POS2, R + POS1 + POS2], True),
    "Bernoulli": (D.Bernoulli, lambda p: td.Bernoulli(probs=p), [P1], [P2], True),
    "Geometric": (D.Geometric, lambda p: td.Geometric(probs=p), [P1], [P2], True),
    "Poisson": (D.Poisson, td.Poisson, [POS1], [POS2], True),
    "Exponential": (D.Exponential, td.Exponential, [POS1], [POS2], True),
    "Laplace": (D.Laplace, td.Laplace, [R, POS1], [R * 0.3, POS2], True),
    "Gamma": (D.Gamma, td.Gamma, [POS1, POS2], [POS2, POS1 + 0.5], False),
    "Beta": (D.Beta, td.Beta, [POS1, POS2], [POS2, POS1 + 0.5], False),
    "Dirichlet": (D.Dirichlet, td.Dirichlet, [np.stack([POS1, POS2])],
                  [np.stack([POS2, POS1 + 1])], False),
    "Cauchy": (D.Cauchy, td.Cauchy, [R, POS1], [R * 0.3, POS2], True),
    "Binomial": (lambda p: D.Binomial(d2s.to_tensor([4.0, 4.0, 4.0]), p),
                 lambda p: td.Binomial(4, probs=p), [P1], [P2], False),
    "MultivariateNormal": (lambda m, t: D.MultivariateNormal(m, scale_tril=t),
                           lambda m, t: td.MultivariateNormal(m, scale_tril=t),
                           [R[None].repeat(2, 0), TRIL], [np.zeros((2, 3)), TRIL[::-1].copy()],
                           False),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_kl_matches_torch(name):
    ctor, tctor, ps, qs, onnx = PAIRS[name]
    n = len(ps)

    def fn(*args):
        return D.kl_divergence(ctor(*args[:n]), ctor(*args[n:]))

    def ref(*args):
        t = [torch.tensor(a) for a in args]
        p, q = tctor(*t[:n]), tctor(*t[n:])
        return td.kl_divergence(p, q).numpy()

    check(fn, ps + qs, ref, onnx=onnx, grad=name != "MultivariateNormal", rtol=1e-6,
          grad_rtol=1e-4, unknown="first" if name == "MultivariateNormal" else "all")


def test_uniform_kl_is_inf_outside_support():
    kl = D.kl_divergence(D.Uniform(0.0, 2.0), D.Uniform(0.5, 3.0))
    assert np.isinf(kl.numpy())


def test_independent_kl_sums_the_reinterpreted_dims():
    p = D.Independent(D.Normal(np.zeros((2, 3)), np.ones((2, 3))), 1)
    q = D.Independent(D.Normal(np.full((2, 3), 0.5), np.full((2, 3), 2.0)), 1)
    want = td.kl_divergence(
        td.Independent(td.Normal(torch.zeros(2, 3, dtype=torch.float64),
                                 torch.ones(2, 3, dtype=torch.float64)), 1),
        td.Independent(td.Normal(torch.full((2, 3), 0.5, dtype=torch.float64),
                                 torch.full((2, 3), 2.0, dtype=torch.float64)), 1)).numpy()
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), want, rtol=1e-12)


def test_register_kl_most_specific_pair_wins_and_missing_pair_raises():
    class MyNormal(D.Normal):
        pass

    class Other(D.Normal):
        pass

    # an unregistered subclass pair falls back to the Normal-Normal rule
    p, q = MyNormal(0.0, 1.0), MyNormal(1.0, 2.0)
    want = D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 2.0)).numpy()
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), want)

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return d2s.to_tensor(42.0)

    assert float(D.kl_divergence(p, q)) == 42.0  # (MyNormal, Normal) beats (Normal, Normal)
    assert float(p.kl_divergence(Other(0.0, 1.0))) == 42.0
    np.testing.assert_allclose(D.kl_divergence(D.Normal(0.0, 1.0), q).numpy(),
                               D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 2.0)).numpy())

    @D.register_kl(D.Normal, MyNormal)
    def _theirs(p, q):
        return d2s.to_tensor(7.0)

    with pytest.raises(NotImplementedError, match="more than one rule"):
        D.kl_divergence(p, q)  # (MyNormal, Normal) and (Normal, MyNormal) tie
    with pytest.raises(NotImplementedError, match="no closed form for \\(Normal, Laplace\\)"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Laplace(0.0, 1.0))
    with pytest.raises(TypeError, match="not a Distribution subclass"):
        D.register_kl(int, D.Normal)
    from d2s.distribution import _kl as kl
    kl._TABLE.pop((MyNormal, D.Normal))
    kl._TABLE.pop((D.Normal, MyNormal))
