"""A variational autoencoder (MLP encoder to mean and log-variance,
reparameterization, MLP decoder, BCE-with-logits reconstruction plus KL),
in the PyTorch-examples shape. The noise may be passed in (as tests and
deterministic evaluation do) or drawn with `d2s.randn`."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, t, train_and_compare


class VAE(nn.Layer):
    def __init__(self, d_in=12, hidden=10, latent=3):
        super().__init__()
        self.enc = nn.Linear(d_in, hidden)
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec1 = nn.Linear(latent, hidden)
        self.dec2 = nn.Linear(hidden, d_in)

    def forward(self, x, eps=None):
        h = F.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        if eps is None:
            eps = d2s.randn(mu.shape)
        z = mu + eps * d2s.exp(0.5 * logvar)
        recon = self.dec2(F.relu(self.dec1(z)))
        bce = F.binary_cross_entropy_with_logits(recon, x, reduction="sum")
        kld = -0.5 * d2s.sum(1 + logvar - mu * mu - d2s.exp(logvar))
        return (bce + kld) / x.shape[0]


SPEC = [InputSpec([None, 12], "float32"), InputSpec([None, 3], "float32")]
RNG = np.random.default_rng(4)
BATCHES = [((RNG.random((n, 12)) > 0.5).astype("float32"), RNG.normal(size=(n, 3)))
           for n in (5, 3, 5, 4)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_vae_elbo_and_updates_match_eager(backend):
    train_and_compare(VAE, BATCHES, backend, SPEC, opt="adam", lr=0.01)


def test_vae_sampling_noise_inside_forward_runs_converted():
    """The noise drawn inside forward: same shapes and a finite loss; the
    values are random, so only eager's kind of result is checked."""
    model = VAE()
    fwd = d2s.jit.to_static(model.forward, input_spec=[InputSpec([None, 12], "float32")])
    loss = fwd(t(BATCHES[0][0]))
    assert loss.shape == () and np.isfinite(loss.numpy())
    loss.backward()
    assert model.mu.weight.grad is not None
