"""Routing and windowed attention as research repos write them: a top-2
mixture of experts (softmax gate, renormalized top-k weights, experts in a
LayerList, a load-balancing auxiliary loss from the one-hot of the first
choice), and a Swin block (cyclic shift with `roll`, window partition and
reverse by reshape/transpose, a relative position bias table indexed by a
buffer, the shifted-window attention mask kept as a buffer). Converted
with a `None` batch and compared with eager over several optimizer steps
on numpy and xla (on xla the batches of one shape: xla_budget)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, train_and_compare
from xla_budget import for_backend

RNG = np.random.RandomState(0)


def f32(*shape):
    return RNG.randn(*shape).astype("float32")


class Expert(nn.Layer):
    def __init__(self, d):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class MoEModel(nn.Layer):
    def __init__(self, d=4, n=3):
        super().__init__()
        self.n = n
        self.gate = nn.Linear(d, n, bias_attr=False)
        self.experts = nn.LayerList([Expert(d) for _ in range(n)])
        self.head = nn.Linear(d, 1)

    def forward(self, x):
        tokens = x.reshape([-1, x.shape[-1]])
        probs = F.softmax(self.gate(tokens), axis=-1)
        top_w, top_i = d2s.topk(probs, 2, axis=-1)
        top_w = top_w / top_w.sum(-1, keepdim=True)
        out = d2s.zeros_like(tokens)
        for e in range(self.n):
            weight = (top_w * (top_i == e).astype("float32")).sum(-1, keepdim=True)
            out = out + weight * self.experts[e](tokens)
        balance = (probs.mean(0) * F.one_hot(top_i[:, 0], self.n).mean(0)).sum() * self.n
        return self.head(out.reshape(x.shape)).mean() + 0.01 * balance


@pytest.mark.parametrize("backend", BACKENDS)
def test_top2_moe_with_balance_loss(backend):
    batches = [(f32(2, 3, 4),), (f32(1, 5, 4),), (f32(2, 3, 4),)]
    train_and_compare(MoEModel, for_backend(batches, backend), backend,
                      [InputSpec([None, None, 4])])


def window_partition(x, ws):
    b, h, w, c = x.shape
    x = x.reshape([b, h // ws, ws, w // ws, ws, c]).transpose([0, 1, 3, 2, 4, 5])
    return x.reshape([-1, ws * ws, c])


def window_reverse(windows, ws, h, w):
    c = windows.shape[-1]
    b = windows.shape[0] // ((h // ws) * (w // ws))
    x = windows.reshape([b, h // ws, w // ws, ws, ws, c]).transpose([0, 1, 3, 2, 4, 5])
    return x.reshape([b, h, w, c])


class SwinBlock(nn.Layer):
    def __init__(self, dim=4, heads=2, ws=2, shift=1, size=4):
        super().__init__()
        self.heads, self.ws, self.shift = heads, ws, shift
        self.norm = nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.table = self.create_parameter(
            [(2 * ws - 1) ** 2, heads], default_initializer=nn.initializer.TruncatedNormal(std=0.02))
        coords = np.stack(np.meshgrid(np.arange(ws), np.arange(ws), indexing="ij")).reshape(2, -1)
        rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0) + ws - 1
        self.register_buffer("rel_index",
                             d2s.to_tensor((rel[..., 0] * (2 * ws - 1) + rel[..., 1]).astype("int64")))
        img = np.zeros((1, size, size, 1), "float32")
        region = 0
        for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
            for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                img[:, hs, wsl, :] = region
                region += 1
        win = window_partition(d2s.to_tensor(img), ws).numpy()[..., 0]
        mask = np.where(win[:, None, :] - win[:, :, None] != 0, -100.0, 0.0).astype("float32")
        self.register_buffer("attn_mask", d2s.to_tensor(mask))

    def attention(self, x):
        b_, n, c = x.shape
        qkv = self.qkv(x).reshape([b_, n, 3, self.heads, c // self.heads]).transpose([2, 0, 3, 1, 4])
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * (c // self.heads) ** -0.5) @ k.transpose([0, 1, 3, 2])
        bias = self.table[self.rel_index.reshape([-1])].reshape([n, n, -1]).transpose([2, 0, 1])
        attn = attn + bias.unsqueeze(0)
        windows = self.attn_mask.shape[0]
        attn = attn.reshape([b_ // windows, windows, self.heads, n, n]) \
            + self.attn_mask.unsqueeze(1).unsqueeze(0)
        attn = F.softmax(attn.reshape([-1, self.heads, n, n]), axis=-1)
        return self.proj((attn @ v).transpose([0, 2, 1, 3]).reshape([b_, n, c]))

    def forward(self, x):
        b, length, c = x.shape
        h = w = int(length ** 0.5)
        shifted = d2s.roll(self.norm(x).reshape([b, h, w, c]), shifts=(-self.shift, -self.shift),
                           axis=(1, 2))
        out = window_reverse(self.attention(window_partition(shifted, self.ws)), self.ws, h, w)
        out = d2s.roll(out, shifts=(self.shift, self.shift), axis=(1, 2))
        return (x + out.reshape([b, h * w, c])).pow(2).mean()


@pytest.mark.parametrize("backend", BACKENDS)
def test_swin_block_with_shifted_windows(backend):
    batches = [(f32(2, 16, 4),), (f32(3, 16, 4),), (f32(2, 16, 4),)]
    # SGD: the keys' bias has a zero gradient (softmax ignores a per-row
    # shift) that Adam would scale its rounding noise up from
    train_and_compare(SwinBlock, for_backend(batches, backend), backend,
                      [InputSpec([None, 16, 4])], opt="sgd", lr=0.1)
