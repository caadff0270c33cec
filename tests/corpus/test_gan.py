"""A GAN with two optimizers (DCGAN-style training loop on an MLP
generator and discriminator): the discriminator step on real and detached
fake samples, then the generator step through the discriminator. Each step
is converted whole (`backward` and `optimizer.step()` inside `to_static`)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import optimizer
from d2s.static import InputSpec

from harness import BACKENDS, close, needs_jax, state

Z, D = 3, 4


class Generator(nn.Layer):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(Z, 8), nn.LeakyReLU(0.2), nn.Linear(8, D), nn.Tanh())

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Layer):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(D, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))

    def forward(self, x):
        return self.net(x)


def make_gan():
    d2s.seed(0)
    g, d = Generator(), Discriminator()
    opt_g = optimizer.Adam(learning_rate=0.01, beta1=0.5, parameters=g.parameters())
    opt_d = optimizer.Adam(learning_rate=0.01, beta1=0.5, parameters=d.parameters())
    return g, d, opt_g, opt_d


def make_steps(g, d, opt_g, opt_d):
    def d_step(real, z):
        fake = g(z).detach()
        real_logit, fake_logit = d(real), d(fake)
        loss = (F.binary_cross_entropy_with_logits(real_logit, d2s.ones_like(real_logit))
                + F.binary_cross_entropy_with_logits(fake_logit, d2s.zeros_like(fake_logit)))
        loss.backward()
        opt_d.step()
        opt_d.clear_grad()
        return loss

    def g_step(z):
        logit = d(g(z))
        loss = F.binary_cross_entropy_with_logits(logit, d2s.ones_like(logit))
        loss.backward()
        opt_g.step()
        opt_g.clear_grad()
        opt_d.clear_grad()      # the generator's backward also reached D's weights
        return loss

    return d_step, g_step


RNG = np.random.default_rng(6)
DATA = [(RNG.normal(1.0, 0.5, (n, D)).astype("float32"), RNG.normal(size=(n, Z)).astype("float32"),
         RNG.normal(size=(n, Z)).astype("float32")) for n in (4, 6, 4, 5)]


def run(static, backend):
    g, d, opt_g, opt_d = make_gan()
    d_step, g_step = make_steps(g, d, opt_g, opt_d)
    if static:
        d_step = d2s.jit.to_static(d_step, backend=backend, input_spec=[
            InputSpec([None, D]), InputSpec([None, Z])])
        g_step = d2s.jit.to_static(g_step, backend=backend, input_spec=[InputSpec([None, Z])])
    losses = []
    for real, z1, z2 in DATA:
        losses.append(d_step(d2s.to_tensor(real), d2s.to_tensor(z1)).numpy())
        losses.append(g_step(d2s.to_tensor(z2)).numpy())
    return losses, state(g), state(d)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gan_two_optimizer_steps_match_eager(backend):
    e_losses, e_g, e_d = run(False, backend)
    s_losses, s_g, s_d = run(True, backend)
    for i, (a, b) in enumerate(zip(s_losses, e_losses)):
        close(a, b, backend, f"loss {i}")
    for k in e_g:
        close(s_g[k], e_g[k], backend, f"G {k}")
    for k in e_d:
        close(s_d[k], e_d[k], backend, f"D {k}")
