"""`F.scaled_dot_product_attention(q, k, v, is_causal=True)` (HuggingFace's
SDPA attention path when no mask is passed) in a model whose batch and
sequence dims are `None` in the InputSpec: the causal mask is built from
the run's lengths. Compared with eager (and PyTorch's SDPA) on numpy and
xla over several lengths, with gradients."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, t

H, HD = 2, 4


class CausalSelfAttention(nn.Layer):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(H * HD, 3 * H * HD)

    def forward(self, x):
        b, s = x.shape[0], x.shape[1]
        q, k, v = d2s.split(self.qkv(x).reshape([b, s, 3 * H, HD]), 3, axis=2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, training=False)
        return out.reshape([b, s, H * HD])


def test_causal_mask_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(0)
    q, k, v = (rng.randn(2, 5, H, HD).astype("float32") for _ in range(3))
    got = F.scaled_dot_product_attention(t(q), t(k), t(v), is_causal=True, training=False)
    tq, tk, tv = (torch.tensor(a).transpose(1, 2) for a in (q, k, v))
    expected = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    np.testing.assert_allclose(got.numpy(), expected.transpose(1, 2).numpy(), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_causal_attention_at_run_time_lengths(backend):
    d2s.seed(0)
    eager = CausalSelfAttention()
    model = CausalSelfAttention()
    model.set_state_dict(eager.state_dict())
    static = d2s.jit.to_static(model, input_spec=[InputSpec([None, None, H * HD])],
                               backend=backend)
    rng = np.random.RandomState(1)
    for b, s in ((2, 5), (1, 3), (3, 1)):
        x = rng.randn(b, s, H * HD).astype("float32")
        grads = []
        for m, f in ((eager, eager), (model, static)):
            out = f(t(x))
            (out * out).sum().backward()
            grads.append((out.numpy(), {k: p.grad.numpy() for k, p in m.named_parameters()}))
            m.clear_gradients()
        close(grads[1][0], grads[0][0], backend, f"output at {b}x{s}")
        for k, g in grads[0][1].items():
            np.testing.assert_allclose(grads[1][1][k], g, rtol=1e-5, atol=1e-6, err_msg=k)
