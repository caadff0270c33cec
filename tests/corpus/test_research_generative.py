"""Generative models as papers' reference code and tutorials write them:
a DDPM with a time-conditioned UNet-lite (sinusoidal embedding, GroupNorm,
skip concat) trained on the noise-prediction loss with the schedule kept as
buffers and indexed by the sampled timesteps, and its ancestral sampler
(`for i in reversed(range(T))`, classifier-free guidance, `@no_grad()`);
a VQ-VAE whose codebook is an EMA kept in buffers updated under `no_grad`
in `forward` (argmin assignment, straight-through `z + (q - z).detach()`);
a RealNVP flow with masked affine couplings accumulating the log-det, and
its inverse. Each converted with `None` dims and compared with eager over
several optimizer steps on numpy and xla (on xla the batches of one shape:
xla_budget); the UNet is saved and loaded."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, infer_and_compare, save_load_infer, t, train_and_compare, twins
from xla_budget import for_backend

RNG = np.random.RandomState(0)


def f32(*shape):
    return RNG.randn(*shape).astype("float32")


def sinusoidal(steps, dim):
    half = dim // 2
    freqs = d2s.exp(-np.log(10000.0) * d2s.arange(half, dtype="float32") / half)
    args = steps.astype("float32")[:, None] * freqs[None]
    return d2s.concat([args.sin(), args.cos()], axis=-1)


class ResBlock(nn.Layer):
    def __init__(self, c, tdim):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(2, c), nn.Conv2D(c, c, 3, padding=1)
        self.t = nn.Linear(tdim, c)
        self.n2, self.c2 = nn.GroupNorm(2, c), nn.Conv2D(c, c, 3, padding=1)

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x)))
        h = h + self.t(F.silu(temb))[:, :, None, None]
        return x + self.c2(F.silu(self.n2(h)))


class UNetDDPM(nn.Layer):
    def __init__(self, c=4, tdim=8, steps=4):
        super().__init__()
        self.tdim, self.steps = tdim, steps
        self.inp = nn.Conv2D(1, c, 3, padding=1)
        self.tmlp = nn.Sequential(nn.Linear(tdim, tdim), nn.Silu(), nn.Linear(tdim, tdim))
        self.down, self.mid = ResBlock(c, tdim), ResBlock(c, tdim)
        self.pool, self.up = nn.AvgPool2D(2), nn.Upsample(scale_factor=2, mode="nearest")
        self.dec = ResBlock(2 * c, tdim)
        self.out = nn.Conv2D(2 * c, 1, 3, padding=1)
        betas = np.linspace(1e-4, 0.2, steps).astype("float32")
        self.register_buffer("betas", d2s.to_tensor(betas))
        self.register_buffer("alphas_cumprod", d2s.to_tensor(np.cumprod(1 - betas)))

    def eps(self, x, steps):
        temb = self.tmlp(sinusoidal(steps, self.tdim))
        d = self.down(self.inp(x), temb)
        u = self.up(self.mid(self.pool(d), temb))
        return self.out(self.dec(d2s.concat([u, d], axis=1), temb))

    def forward(self, x0, steps, noise):
        ac = self.alphas_cumprod[steps].reshape([-1, 1, 1, 1])
        xt = ac.sqrt() * x0 + (1 - ac).sqrt() * noise
        return F.mse_loss(self.eps(xt, steps), noise)

    @d2s.no_grad()
    def sample(self, x, noises, guidance):
        for i in reversed(range(self.steps)):
            steps = d2s.full([x.shape[0]], i, dtype="int64")
            cond = self.eps(x, steps)
            uncond = self.eps(x, steps) * 0.5
            e = uncond + guidance * (cond - uncond)
            b, ac = self.betas[i], self.alphas_cumprod[i]
            mean = (x - b / (1 - ac).sqrt() * e) / (1 - b).sqrt()
            x = mean + b.sqrt() * noises[i] if i > 0 else mean
        return x


IMAGE = [InputSpec([None, 1, None, None]), InputSpec([None], "int64"),
         InputSpec([None, 1, None, None])]


@pytest.mark.parametrize("backend", BACKENDS)
def test_ddpm_training_sampling_and_save(backend, tmp_path):
    batches = [(f32(2, 1, 4, 4), np.array([1, 3]), f32(2, 1, 4, 4)),
               (f32(1, 1, 8, 6), np.array([3]), f32(1, 1, 8, 6)),
               (f32(2, 1, 4, 4), np.array([0, 2]), f32(2, 1, 4, 4))]
    eager, model, _ = train_and_compare(UNetDDPM, for_backend(batches, backend), backend, IMAGE,
                                        opt="adam")
    sample = d2s.jit.to_static(model.sample, backend=backend, input_spec=[
        InputSpec([None, 1, 4, 4]), InputSpec([4, None, 1, 4, 4]), InputSpec([])])
    for n in (2, 3) if backend == "numpy" else (2,):
        infer_and_compare(eager.sample, sample, [t(f32(n, 1, 4, 4)), t(f32(4, n, 1, 4, 4)),
                                                 d2s.to_tensor(2.0)], backend, "sample")
    assert len(sample.program_cache) == 1
    if backend == "numpy":
        save_load_infer(model, IMAGE, [t(b) for b in batches[0]], tmp_path)


class VQVAE(nn.Layer):
    def __init__(self, codes=5, dim=3, decay=0.9, eps=1e-5):
        super().__init__()
        self.decay, self.eps_ = decay, eps
        self.enc, self.dec = nn.Linear(4, dim), nn.Linear(dim, 4)
        embed = np.random.RandomState(0).randn(codes, dim).astype("float32")
        self.register_buffer("embed", d2s.to_tensor(embed))
        self.register_buffer("cluster_size", d2s.zeros([codes]))
        self.register_buffer("embed_avg", d2s.to_tensor(embed))

    def forward(self, x):
        z = self.enc(x)
        d = (z ** 2).sum(1, keepdim=True) - 2 * z @ self.embed.T + (self.embed ** 2).sum(1)
        idx = d.argmin(1)
        onehot = F.one_hot(idx, self.embed.shape[0]).astype(z.dtype)
        q = F.embedding(idx, self.embed)
        if self.training:
            with d2s.no_grad():
                self.cluster_size.set_value(self.cluster_size * self.decay
                                            + (1 - self.decay) * onehot.sum(0))
                self.embed_avg.set_value(self.embed_avg * self.decay
                                         + (1 - self.decay) * (onehot.T @ z.detach()))
                n = self.cluster_size.sum()
                size = (self.cluster_size + self.eps_) / (n + self.embed.shape[0] * self.eps_) * n
                self.embed.set_value(self.embed_avg / size.unsqueeze(1))
        commit = F.mse_loss(z, q.detach())
        q = z + (q - z).detach()
        return F.mse_loss(self.dec(q), x) + 0.25 * commit


@pytest.mark.parametrize("backend", BACKENDS)
def test_vqvae_with_ema_codebook_buffers(backend):
    train_and_compare(VQVAE, [(f32(6, 4),) for _ in range(4)], backend, [InputSpec([None, 4])])


class Coupling(nn.Layer):
    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", d2s.to_tensor(mask))
        self.s = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4))
        self.t = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))

    def forward(self, x, logdet, reverse=False):
        xm = x * self.mask
        s, shift = self.s(xm) * (1 - self.mask), self.t(xm) * (1 - self.mask)
        if not reverse:
            return xm + (1 - self.mask) * (x * s.exp() + shift), logdet + s.sum(axis=1)
        return xm + (1 - self.mask) * ((x - shift) * (-s).exp()), logdet - s.sum(axis=1)


class RealNVP(nn.Layer):
    def __init__(self):
        super().__init__()
        m = np.array([1, 0, 1, 0], "float32")
        self.layers = nn.LayerList([Coupling(m if i % 2 == 0 else 1 - m) for i in range(4)])

    def forward(self, x):
        logdet = d2s.zeros([x.shape[0]])
        for layer in self.layers:
            x, logdet = layer(x, logdet)
        logp = -0.5 * (x ** 2).sum(1) - 2 * np.log(2 * np.pi)
        return -(logp + logdet).mean()

    def inverse(self, z):
        logdet = d2s.zeros([z.shape[0]])
        for layer in reversed(self.layers):
            z, logdet = layer(z, logdet, reverse=True)
        return z, logdet


@pytest.mark.parametrize("backend", BACKENDS)
def test_realnvp_likelihood_and_inverse(backend):
    eager, model, _ = train_and_compare(RealNVP, [(f32(5, 4),) for _ in range(3)], backend,
                                        [InputSpec([None, 4])])
    inverse = d2s.jit.to_static(model.inverse, input_spec=[InputSpec([None, 4])],
                                backend=backend)
    z = f32(3, 4)
    infer_and_compare(eager.inverse, inverse, [t(z)], backend, "inverse")
    # the inverse undoes the flow (the log-dets cancel)
    a, b = twins(RealNVP)
    x = t(f32(3, 4))
    logdet = d2s.zeros([3])
    y = x
    for layer in a.layers:
        y, logdet = layer(y, logdet)
    back, ld = a.inverse(y)
    np.testing.assert_allclose(back.numpy(), x.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose((logdet + ld).numpy(), 0.0, atol=1e-5)
