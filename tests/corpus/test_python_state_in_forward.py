"""Python-valued state that a forward reads and updates on every call, the
way ported training code keeps step counters: a VAE whose KL weight is
annealed by a step counter kept as a Python int on the layer
(`beta = min(1, self.step / warmup); self.step += 1`, the common
"KL annealing" recipe), and a layer that keeps a Python list of past
statistics and reads its length. Eagerly the counter moves every call. A
converted forward reads the attribute once while tracing and bakes the
value into the program; nothing makes the next call trace again, so later
calls would compute with the first call's value. d2s guards both (jit.guards):
the Python write `self.step += 1` is replayed after each run and the program
holds only for the counter value it was built for, the list only for its
length; a new value traces again. The tensor-buffer form of the same counter
needs one program for every call (last test)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, t, twins

D_IN, LATENT, WARMUP = 6, 2, 4

class AnnealedVAE(nn.Layer):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(D_IN, 2 * LATENT)
        self.dec = nn.Linear(LATENT, D_IN)
        self.step = 0

    def forward(self, x, eps):
        mu, logvar = d2s.chunk(self.enc(x), 2, axis=-1)
        z = mu + eps * d2s.exp(0.5 * logvar)
        rec = F.binary_cross_entropy_with_logits(self.dec(z), x)
        kld = -0.5 * d2s.mean(1 + logvar - mu * mu - d2s.exp(logvar))
        beta = min(1.0, self.step / WARMUP)
        self.step += 1
        return rec + beta * kld


class BufferAnnealedVAE(AnnealedVAE):
    """The same schedule with the counter in a tensor buffer: a write of a
    traced value, replayed after every run."""

    def __init__(self):
        super().__init__()
        del self.step
        self.register_buffer("step", d2s.zeros([1]))

    def forward(self, x, eps):
        mu, logvar = d2s.chunk(self.enc(x), 2, axis=-1)
        z = mu + eps * d2s.exp(0.5 * logvar)
        rec = F.binary_cross_entropy_with_logits(self.dec(z), x)
        kld = -0.5 * d2s.mean(1 + logvar - mu * mu - d2s.exp(logvar))
        beta = d2s.clip(self.step / WARMUP, max=1.0)
        self.step = self.step + 1
        return (rec + beta * kld).squeeze()


class RunningHistory(nn.Layer):
    """Normalises by the mean of the batch means seen so far, kept in a list."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.history = []

    def forward(self, x):
        self.history.append(x.mean().detach())
        running = d2s.add_n(self.history) / len(self.history)
        return self.fc(x - running)


RNG = np.random.default_rng(23)
DATA = [((RNG.random((4, D_IN)) > 0.5).astype("float32"), RNG.normal(size=(4, LATENT)))
        for _ in range(4)]
SPEC = [InputSpec([None, D_IN]), InputSpec([None, LATENT])]


def losses(cls, static, backend="numpy"):
    eager, model = twins(cls)
    fn = d2s.jit.to_static(model.forward, input_spec=SPEC, backend=backend) if static else eager
    return [fn(t(x), t(e)).numpy() for x, e in DATA]


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_int_step_counter_in_forward(backend):
    expected = losses(AnnealedVAE, False)
    assert len({float(v) for v in expected}) == len(expected)      # beta moves eagerly
    for i, (a, e) in enumerate(zip(losses(AnnealedVAE, True, backend), expected)):
        close(a, e, backend, f"call {i}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_list_length_read_in_forward(backend):
    eager, model = twins(RunningHistory)
    fn = d2s.jit.to_static(model.forward, input_spec=[InputSpec([None, 3])], backend=backend)
    for i in range(3):
        x = t(RNG.normal(size=(2, 3)))
        close(fn(x).numpy(), eager(x).numpy(), backend, f"call {i}")
    assert len(model.history) == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_tensor_buffer_step_counter_in_forward(backend):
    eager, model = twins(BufferAnnealedVAE)
    fn = d2s.jit.to_static(model.forward, input_spec=SPEC, backend=backend)
    for i, (x, e) in enumerate(DATA):
        close(fn(t(x), t(e)).numpy(), eager(t(x), t(e)).numpy(), backend, f"call {i}")
    assert float(model.step.numpy()[0]) == len(DATA)
