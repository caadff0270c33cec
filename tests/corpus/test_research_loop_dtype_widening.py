"""A tensor loop whose body widens a carried value's dtype, as research code
does without meaning to: a diffusion sampler iterating a tensor of
timesteps whose sinusoidal embedding scales by `np.log(10000.0)` (a numpy
float64 scalar: NumPy 2 promotes float32 to float64 with it), an attention
step scaled by `np.sqrt(d)` inside a decoding `while`. Eagerly the carried
value is float64 from the first trip on; converted code carries it in the
wider dtype from the start (the same values; after zero trips too, where
eager still holds the narrower one) instead of refusing. A body
that narrows (float64 -> float32) keeps the error naming the variable.
Compared with eager on numpy and xla, with a `None` batch."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec
from d2s.static.control_flow import ControlFlowError

from harness import BACKENDS, close, t, twins


class Sampler(nn.Layer):
    def __init__(self, steps=5):
        super().__init__()
        betas = np.linspace(1e-4, 0.2, steps).astype("float32")
        self.register_buffer("betas", d2s.to_tensor(betas))
        self.register_buffer("alphas_cumprod", d2s.to_tensor(np.cumprod(1 - betas)))
        self.net = nn.Sequential(nn.Linear(3 + 4, 8), nn.Silu(), nn.Linear(8, 3))

    def embed(self, t):
        freqs = d2s.exp(-np.log(10000.0) * d2s.arange(2, dtype="float32") / 2)
        a = t.astype("float32").unsqueeze(-1) * freqs
        return d2s.concat([a.sin(), a.cos()], -1)

    def forward(self, x, noises, timesteps):
        for i in timesteps:
            t = d2s.expand(i.reshape([1]), [x.shape[0]])
            eps = self.net(d2s.concat([x, self.embed(t)], -1))
            b, ac = self.betas[i], self.alphas_cumprod[i]
            mean = (x - b / d2s.sqrt(1 - ac) * eps) / d2s.sqrt(1 - b)
            x = d2s.where(i > 0, mean + d2s.sqrt(b) * noises[i], mean)
        return x


def attend_until(h, memory, limit):
    step = 0
    while h.abs().sum() < limit and step < 4:
        scores = d2s.matmul(h, memory, transpose_y=True) / np.sqrt(memory.shape[-1])
        h = h + F.softmax(scores, -1) @ memory
        step += 1
    return h, step


def narrowing(x, n):
    y = x.astype("float64")
    for i in range(n):
        y = (y * 0.5).astype("float32")
    return y


RNG = np.random.RandomState(0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sampler_over_a_tensor_of_timesteps(backend):
    eager, model = twins(Sampler)
    spec = [InputSpec([None, 3]), InputSpec([5, None, 3]), InputSpec([None], "int64")]
    static = d2s.jit.to_static(model.forward, input_spec=spec, backend=backend)
    for n in (2, 3):
        x, noises = RNG.randn(n, 3).astype("float32"), RNG.randn(5, n, 3).astype("float32")
        steps = t(np.arange(4, -1, -1))
        expected = eager(t(x), t(noises), steps)
        actual = static(t(x), t(noises), steps)
        assert actual.dtype == expected.dtype == np.float64
        close(actual.numpy(), expected.numpy(), "xla", f"batch {n}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_attention_scaled_by_a_numpy_scalar_in_a_while(backend):
    static = d2s.jit.to_static(attend_until, backend=backend)
    h, memory = RNG.randn(2, 3).astype("float32"), RNG.randn(4, 3).astype("float32")
    for limit, trips in ((100.0, 4), (2.0, 0)):
        eh, en = attend_until(t(h), t(memory), t(np.float32(limit)))
        sh, sn = static(t(h), t(memory), t(np.float32(limit)))
        assert int(sn) == int(en) == trips
        # after a trip eager holds float64 too; after none, the program's value
        # is eager's float32 value in the loop's one dtype
        assert sh.dtype == np.float64 and eh.dtype == (np.float64 if trips else np.float32)
        close(sh.numpy(), eh.numpy().astype("float64"), "xla", "h")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_body_that_narrows_is_still_an_error(backend):
    static = d2s.jit.to_static(narrowing, backend=backend)
    with pytest.raises(ControlFlowError, match="'y' changes dtype from float64 to float32"):
        static(t(np.ones(2, "float32")), d2s.to_tensor(3))
