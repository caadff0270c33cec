"""LLaMA-style rotary embedding (a non-persistable `inv_freq` buffer,
`rotate_half` by slicing the last axis in halves, cos/sin of position ids
times the buffer) converted for xla while XLA compiles in the background:
the first calls run on numpy (the lower tier), fed the inputs xla already
moved to the device; they must give eager's values, and so must the calls
after the compile has finished."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn

from harness import close, needs_jax, t


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return d2s.concat((-x2, x1), axis=-1)


class Rotary(nn.Layer):
    def __init__(self, dim=4, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (d2s.arange(0, dim, 2, dtype="float32") / dim))
        self.register_buffer("inv_freq", inv_freq, persistable=False)

    def forward(self, q, k, position_ids=None):
        if position_ids is None:
            position_ids = d2s.arange(q.shape[-2], dtype="int64").unsqueeze(0)
        freqs = position_ids.astype("float32").unsqueeze(-1) * self.inv_freq[None, None, :]
        emb = d2s.concat((freqs, freqs), axis=-1)
        cos, sin = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


@needs_jax
@pytest.mark.parametrize("grad", [False, True], ids=["infer", "grad"])
def test_rotary_while_xla_compiles_in_the_background(grad):
    rng = np.random.RandomState(0)
    q, k = rng.randn(2, 2, 5, 4).astype("float32"), rng.randn(2, 2, 5, 4).astype("float32")
    model = Rotary()
    static = d2s.jit.to_static(model, backend="xla", compile="async")
    expected = model(t(q), t(k))
    for _ in range(3):
        qs, ks = t(q), t(k)
        if grad:
            qs.stop_gradient = False
        out = static(qs, ks)
        for a, e, what in zip(out, expected, ("q", "k")):
            close(a.numpy(), e.numpy(), "xla", what)
        if grad:
            out[0].sum().backward()
            close(qs.grad.numpy(), np.full_like(q, 0) + _dq(q, model), "xla", "dq")


def _dq(q, model):
    qe = t(q)
    qe.stop_gradient = False
    model(qe, qe * 0)[0].sum().backward()
    return qe.grad.numpy()
