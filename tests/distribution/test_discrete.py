"""Bernoulli, Geometric, Poisson, Binomial, Categorical, Multinomial:
log_prob, entropy, mean, variance against torch.distributions (with
gradients and to_static on numpy and xla), Paddle's documented Categorical
numbers, and sample frequencies."""
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

rng = np.random.default_rng(5)
P = rng.uniform(0.1, 0.9, 3)
RATE = rng.uniform(0.5, 4.0, 3)
COUNTS = np.array([0.0, 2.0, 5.0])
N = np.array([5.0, 6.0, 7.0])

# name: (d2s ctor, torch ctor, float64 parameter arrays, values, entropy, ONNX)
FAMILIES = {
    "Bernoulli": (D.Bernoulli, lambda p: td.Bernoulli(probs=p), [P],
                  np.array([0.0, 1.0, 1.0]), True, True),
    "Geometric": (D.Geometric, lambda p: td.Geometric(probs=p), [P], COUNTS, True, True),
    "Poisson": (D.Poisson, td.Poisson, [RATE], COUNTS, False, False),
    "Binomial": (lambda p: D.Binomial(d2s.to_tensor(N), p),
                 lambda p: td.Binomial(torch.tensor(N), probs=p), [P], COUNTS, False, False),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_mass_functions_match_torch(name):
    ctor, tctor, ps, value, entropy, onnx = FAMILIES[name]

    def fn(p, v):
        d = ctor(p)
        outs = [d.log_prob(v), d.mean + d2s.zeros_like(v), d.variance + d2s.zeros_like(v)]
        return tuple(outs + ([d.entropy()] if entropy else []))

    def ref(p, v):
        d = tctor(torch.tensor(p))
        d._validate_args = False
        outs = [d.log_prob(torch.tensor(v, dtype=torch.float64)), d.mean, d.variance]
        return tuple(o.numpy() for o in outs + ([d.entropy()] if entropy else []))

    value = value.copy()  # the values are data, not differentiated: int64 keeps them fixed
    check(fn, [ps[0], value.astype(np.int64)], ref, onnx=onnx, rtol=1e-6, grad_rtol=1e-4)


def test_binomial_entropy_matches_torch():
    d = D.Binomial(d2s.to_tensor(N), P)
    want = [td.Binomial(int(n), probs=torch.tensor(p)).entropy().item() for n, p in zip(N, P)]
    np.testing.assert_allclose(d.entropy().numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_sample_moments(name):
    ctor, _, ps, _, _, _ = FAMILIES[name]
    d = ctor(ps[0])
    d2s.seed(1)
    s = d.sample([20000]).numpy().astype(np.float64)
    assert s.shape == (20000, 3)
    mean, var = d.mean.numpy(), d.variance.numpy()
    assert np.all(np.abs(s.mean(0) - mean) <= 5 * np.sqrt(var / 20000)), (s.mean(0), mean)
    np.testing.assert_allclose(s.var(0), var, rtol=0.08)


def test_bernoulli_relaxed_rsample_is_differentiable():
    p = d2s.to_tensor(P, stop_gradient=False)
    d2s.seed(2)
    r = D.Bernoulli(p).rsample([4], temperature=0.5)
    assert tuple(r.shape) == (4, 3) and ((r.numpy() > 0) & (r.numpy() < 1)).all()
    r.sum().backward()
    assert p.grad is not None and np.all(p.grad.numpy() > 0)  # more p, larger relaxed draws


# Paddle's documented example (python/paddle/distribution/categorical.py)
PX = [0.55355281, 0.20714243, 0.01162981, 0.51577556, 0.36369765, 0.26091650]
PY = [0.77663314, 0.90824795, 0.15685187, 0.04279523, 0.34468332, 0.79557180]


def test_categorical_matches_paddle_documented_values():
    cat, cat2 = D.Categorical(d2s.to_tensor(PX)), D.Categorical(d2s.to_tensor(PY))
    value = d2s.to_tensor([2, 1, 3])
    np.testing.assert_allclose(cat.entropy().numpy(), 1.77528250, rtol=1e-6)
    kl = cat.kl_divergence(cat2)
    assert tuple(kl.shape) == (1,)
    np.testing.assert_allclose(kl.numpy(), [0.07195196], rtol=1e-5)
    np.testing.assert_allclose(D.kl_divergence(cat, cat2).numpy(), [0.07195196], rtol=1e-5)
    np.testing.assert_allclose(cat.probs(value).numpy(), [0.00608027, 0.10829761, 0.26965630],
                               rtol=1e-5)
    np.testing.assert_allclose(cat.log_prob(value).numpy(),
                               [-5.10270691, -2.22287226, -1.31060708], rtol=1e-6)


def test_categorical_batched_against_torch_with_gradients():
    w = rng.uniform(0.1, 1.0, (2, 4))
    value = np.array([[3, 0], [1, 2]])  # (n, batch): a value per distribution

    def fn(w, v):
        d = D.Categorical(w)
        return d.log_prob(v), d.entropy(), d.probs(d2s.to_tensor([1, 3, 0]))

    def ref(w, v):
        tw = torch.tensor(w)
        by_sum = td.Categorical(probs=tw)  # Paddle: probs/log_prob normalize by the sum
        by_softmax = td.Categorical(logits=tw)  # Paddle: entropy takes the softmax
        lp = by_sum.log_prob(torch.tensor(v).T).T.numpy()
        p = (tw / tw.sum(-1, keepdim=True))[:, [1, 3, 0]].numpy()
        return lp, by_softmax.entropy().numpy(), p

    check(fn, [w, value.T.copy()], ref, onnx=False, grad_rtol=1e-4)


def test_categorical_and_multinomial_sample_frequencies():
    w = np.array([[1.0, 2.0, 7.0], [5.0, 3.0, 2.0]])
    d2s.seed(4)
    s = D.Categorical(w).sample([8000]).numpy()
    assert tuple(s.shape) == (8000, 2) and s.dtype == np.int64
    freq = np.stack([(s == k).mean(0) for k in range(3)], -1)
    np.testing.assert_allclose(freq, w / w.sum(-1, keepdims=True), atol=0.025)
    m = D.Multinomial(5, w)
    c = m.sample([4000]).numpy()
    assert c.shape == (4000, 2, 3) and (c.sum(-1) == 5).all()
    np.testing.assert_allclose(c.mean(0), m.mean.numpy(), atol=0.1)


def test_multinomial_log_prob_matches_torch():
    p = rng.uniform(0.1, 1.0, (2, 3))
    v = np.array([[1.0, 2.0, 2.0], [0.0, 0.0, 5.0]])

    def fn(p):
        return D.Multinomial(5, p).log_prob(d2s.to_tensor(v)), D.Multinomial(5, p).variance

    def ref(p):
        d = td.Multinomial(5, probs=torch.tensor(p))
        return d.log_prob(torch.tensor(v)).numpy(), d.variance.numpy()

    check(fn, [p], ref, onnx=False, grad_rtol=1e-4)


def test_cdfs_against_numpy():
    k = np.array([0.0, 1.0, 4.0])
    np.testing.assert_allclose(D.Geometric(P).cdf(k).numpy(),
                               1 - (1 - P) ** (k + 1), rtol=1e-12)
    np.testing.assert_allclose(D.Geometric(P).pmf(k).numpy(), (1 - P) ** k * P, rtol=1e-12)
    v = np.array([-0.5, 0.5, 1.0])
    np.testing.assert_allclose(D.Bernoulli(P).cdf(v).numpy(), [0.0, 1 - P[1], 1.0], rtol=1e-12)
