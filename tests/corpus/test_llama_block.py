"""A Llama-style decoder (RMSNorm, rotary position embedding on q and k,
causal attention, SwiGLU feed-forward, pre-norm residuals, tied-free LM
head), written the way the Llama ports in PaddleNLP / HF PyTorch do,
shrunk to two layers of width 8."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, save_load_infer, t, train_and_compare

V, D, NH, FF, LAYERS = 16, 8, 2, 12, 2
HD = D // NH


class RMSNorm(nn.Layer):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = self.create_parameter([dim], default_initializer=nn.initializer.Constant(1.0))
        self.eps = eps

    def forward(self, x):
        var = d2s.mean(x * x, axis=-1, keepdim=True)
        return x * d2s.rsqrt(var + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return d2s.concat([-x2, x1], axis=-1)


def rope(q, k, seq_len):
    inv = 1.0 / (10000.0 ** (d2s.arange(0, HD, 2, dtype="float32") / HD))
    pos = d2s.arange(seq_len, dtype="float32")
    freqs = pos.unsqueeze(1) * inv.unsqueeze(0)                      # [T, HD/2]
    emb = d2s.concat([freqs, freqs], axis=-1)                         # [T, HD]
    cos, sin = d2s.cos(emb)[None, None], d2s.sin(emb)[None, None]
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class Attention(nn.Layer):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(D, D, bias_attr=False)
        self.k_proj = nn.Linear(D, D, bias_attr=False)
        self.v_proj = nn.Linear(D, D, bias_attr=False)
        self.o_proj = nn.Linear(D, D, bias_attr=False)

    def forward(self, x):
        b, s = x.shape[0], x.shape[1]
        q = self.q_proj(x).reshape([b, s, NH, HD]).transpose([0, 2, 1, 3])
        k = self.k_proj(x).reshape([b, s, NH, HD]).transpose([0, 2, 1, 3])
        v = self.v_proj(x).reshape([b, s, NH, HD]).transpose([0, 2, 1, 3])
        q, k = rope(q, k, s)
        scores = d2s.matmul(q, k, transpose_y=True) / (HD ** 0.5)
        mask = d2s.triu(d2s.full([s, s], float("-inf")), diagonal=1)
        probs = F.softmax(scores + mask, axis=-1)
        out = d2s.matmul(probs, v).transpose([0, 2, 1, 3]).reshape([b, s, D])
        return self.o_proj(out)


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(D, FF, bias_attr=False)
        self.up = nn.Linear(D, FF, bias_attr=False)
        self.down = nn.Linear(FF, D, bias_attr=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.attn_norm, self.attn = RMSNorm(D), Attention()
        self.mlp_norm, self.mlp = RMSNorm(D), MLP()

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class TinyLlama(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        self.layers = nn.LayerList([Block() for _ in range(LAYERS)])
        self.norm = RMSNorm(D)
        self.lm_head = nn.Linear(D, V, bias_attr=False)

    def forward(self, ids):
        h = self.embed(ids)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.norm(h))


SPEC = [InputSpec([None, None], "int64")]
RNG = np.random.default_rng(8)
BATCHES = [(RNG.integers(0, V, (2, n)),) for n in (5, 7, 4)]


def next_token_loss(logits, ids):
    return F.cross_entropy(logits[:, :-1].reshape([-1, V]), ids[:, 1:].reshape([-1]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_llama_trains_like_eager_for_every_length(backend):
    _, _, fwd = train_and_compare(TinyLlama, BATCHES, backend, SPEC, loss=next_token_loss,
                                  opt="adamw", lr=0.01)
    assert len(fwd.program_cache) == 1


def test_llama_save_load_infer(tmp_path):
    model, _, _ = train_and_compare(TinyLlama, BATCHES[:1], "numpy", SPEC, loss=next_token_loss)
    save_load_infer(model, SPEC, [t(RNG.integers(0, V, (1, 6)))], tmp_path)
