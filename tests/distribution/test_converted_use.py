"""Distributions inside converted code, on the numpy and xla backends: a
policy-gradient loss, a VAE's reparameterized sample and KL term in a Layer,
and an SAC-style squashed Gaussian; eager and static values and gradients
agree (draws seeded alike), and sample() draws afresh on every call."""
import warnings

import numpy as np
import pytest

import d2s
import d2s.distribution as D
from d2s import nn
from d2s.static.backend import BackendFallbackWarning

BACKENDS = ["numpy", "xla"]
rng = np.random.default_rng(21)


def _static(fn, backend):
    return d2s.jit.to_static(fn, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_policy_gradient_loss_eager_equals_static(backend):
    probs = rng.uniform(0.1, 1.0, (4, 3))
    actions = np.array([0, 2, 1, 2])
    adv = rng.standard_normal(4)

    def pg_loss(w, a, adv):
        dist = D.Categorical(w)  # a: (batch, 1), one action per distribution (Paddle's)
        return -(dist.log_prob(a).squeeze(-1) * adv).mean() - 0.01 * dist.entropy().mean()

    def run(f):
        w = d2s.to_tensor(probs, stop_gradient=False)
        loss = f(w, d2s.to_tensor(actions[:, None]), d2s.to_tensor(adv))
        loss.backward()
        return loss.numpy(), w.grad.numpy()

    want = run(pg_loss)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        got = run(_static(pg_loss, backend))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-9)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-9, atol=1e-12)
    # the reference: log(w[a] / sum w) by numpy
    p = probs / probs.sum(-1, keepdims=True)
    sm = np.exp(probs) / np.exp(probs).sum(-1, keepdims=True)
    ref = (-(np.log(p[np.arange(4), actions]) * adv).mean()
           + 0.01 * (sm * np.log(sm)).sum(-1).mean())
    np.testing.assert_allclose(want[0], ref, rtol=1e-12)


class VAEHead(nn.Layer):
    """Encoder output -> (z, KL(q(z|x) || N(0, 1))), z reparameterized."""

    def __init__(self):
        super().__init__()
        self.mu = nn.Linear(4, 2)
        self.log_sigma = nn.Linear(4, 2)

    def forward(self, h):
        q = D.Normal(self.mu(h), d2s.exp(self.log_sigma(h)))
        prior = D.Normal(d2s.zeros_like(q.loc), d2s.ones_like(q.scale))
        z = q.rsample()
        kl = D.kl_divergence(q, prior).sum(-1).mean()
        return (z * z).sum() + kl, z


@pytest.mark.parametrize("backend", BACKENDS)
def test_vae_layer_eager_equals_static(backend):
    h = rng.standard_normal((3, 4)).astype("float32")
    d2s.seed(0)
    layer = VAEHead()

    def run(call):
        layer.clear_gradients()
        d2s.seed(5)
        loss, z = call(d2s.to_tensor(h))
        loss.backward()
        return loss.numpy(), z.numpy(), layer.mu.weight.grad.numpy(), \
            layer.log_sigma.weight.grad.numpy()

    want = run(layer)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        static = _static(layer.forward, backend)
        got = run(static)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
    # the KL term by numpy, from the layer's own mu and sigma
    mu = h @ layer.mu.weight.numpy() + layer.mu.bias.numpy()
    sig = np.exp(h @ layer.log_sigma.weight.numpy() + layer.log_sigma.bias.numpy())
    kl = (0.5 * (sig ** 2 + mu ** 2) - 0.5 - np.log(sig)).sum(-1).mean()
    d2s.seed(5)
    z = mu + sig * d2s.randn([3, 2]).numpy()
    np.testing.assert_allclose(want[0], (z * z).sum() + kl, rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sample_draws_afresh_per_call_and_follows_the_seed(backend):
    def draw(loc, w):
        return D.Normal(loc, 1.0).sample([3]), D.Categorical(w).sample([6]), \
            D.Gamma(d2s.ones_like(loc) * 2.0, 1.0).sample([2])

    static = _static(draw, backend)
    loc = d2s.to_tensor(np.zeros(2, "float32"))
    w = d2s.to_tensor(np.ones((2, 5), "float32"))
    d2s.seed(9)
    first = [t.numpy() for t in static(loc, w)]
    second = [t.numpy() for t in static(loc, w)]
    for a, b in zip(first, second):
        assert not np.array_equal(a, b)
    d2s.seed(9)
    eager = [t.numpy() for t in draw(loc, w)]
    for a, b in zip(first, eager):
        np.testing.assert_array_equal(a, b)
    assert first[0].shape == (3, 2) and first[1].shape == (6, 2) and first[2].shape == (2, 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_squashed_gaussian_actor_with_none_batch(backend):
    """SAC's actor loss with an InputSpec None batch dim: eager and static equal."""
    from d2s.static import InputSpec

    def actor_loss(mu, log_std):
        base = D.Normal(mu, d2s.exp(log_std))
        dist = D.TransformedDistribution(base, [D.TanhTransform()])
        a = dist.rsample()
        return (dist.log_prob(d2s.clip(a, -0.999, 0.999)).sum(-1) - (a * a).sum(-1)).mean()

    mu = rng.standard_normal((5, 2)).astype("float32")
    ls = rng.uniform(-1, 0, (5, 2)).astype("float32")

    def run(f):
        tm = d2s.to_tensor(mu, stop_gradient=False)
        d2s.seed(3)
        loss = f(tm, d2s.to_tensor(ls))
        loss.backward()
        return loss.numpy(), tm.grad.numpy()

    want = run(actor_loss)
    spec = [InputSpec([None, 2], "float32"), InputSpec([None, 2], "float32")]
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        static = d2s.jit.to_static(actor_loss, input_spec=spec, backend=backend)
        got = run(static)
    np.testing.assert_allclose(got[0], want[0], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=2e-5, atol=1e-6)
