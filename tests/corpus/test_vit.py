"""A tiny Vision Transformer (PaddleClas / timm style): patch embedding by a
strided Conv2D, a learnable class token and position embeddings created
with `create_parameter`, pre-norm encoder blocks with dropout kept on in
train mode, and a head on the class token. Dropout draws from the global
generator: eager and converted runs are seeded alike before each call, so
their masks (and so losses and gradients) must agree."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import (BACKENDS, close, grads, make_optimizer, save_load_infer, state, t,
                     twins)
from xla_budget import for_backend

IMG, PATCH, DIM, HEADS, CLASSES = 8, 4, 8, 2, 3
N_PATCH = (IMG // PATCH) ** 2


class Attention(nn.Layer):
    def __init__(self, dim, heads, drop=0.1):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        # no qkv bias (PaddleClas' default): the key bias has a zero gradient in
        # exact arithmetic, and Adam would amplify its rounding noise
        self.qkv = nn.Linear(dim, dim * 3, bias_attr=False)
        self.proj = nn.Linear(dim, dim)
        self.attn_drop = nn.Dropout(drop)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape([-1, n, 3, self.heads, c // self.heads])
        qkv = qkv.transpose([2, 0, 3, 1, 4])
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = d2s.matmul(q, k, transpose_y=True) * self.scale
        attn = self.attn_drop(F.softmax(attn, axis=-1))
        x = d2s.matmul(attn, v).transpose([0, 2, 1, 3]).reshape([-1, n, c])
        return self.proj(x)


class Block(nn.Layer):
    def __init__(self, dim, heads, drop=0.1):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, epsilon=1e-6)
        self.attn = Attention(dim, heads, drop)
        self.norm2 = nn.LayerNorm(dim, epsilon=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Dropout(drop),
                                 nn.Linear(2 * dim, dim), nn.Dropout(drop))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(nn.Layer):
    def __init__(self, depth=2):
        super().__init__()
        self.patch_embed = nn.Conv2D(3, DIM, PATCH, stride=PATCH)
        self.cls_token = self.create_parameter(
            [1, 1, DIM], default_initializer=nn.initializer.TruncatedNormal(std=0.02))
        self.pos_embed = self.create_parameter(
            [1, N_PATCH + 1, DIM], default_initializer=nn.initializer.TruncatedNormal(std=0.02))
        self.pos_drop = nn.Dropout(0.1)
        self.blocks = nn.LayerList([Block(DIM, HEADS) for _ in range(depth)])
        self.norm = nn.LayerNorm(DIM, epsilon=1e-6)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose([0, 2, 1])       # [B, N, D]
        cls = self.cls_token.expand([x.shape[0], -1, -1])
        x = d2s.concat([cls, x], axis=1)
        x = self.pos_drop(x + self.pos_embed)
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return self.head(x[:, 0])


SPEC = [InputSpec([None, 3, IMG, IMG], "float32")]
RNG = np.random.default_rng(11)
BATCHES = [(RNG.normal(size=(n, 3, IMG, IMG)), RNG.integers(0, CLASSES, n)) for n in (4, 2, 4)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_vit_trains_with_dropout_like_eager(backend):
    eager, model = twins(ViT)
    fwd = d2s.jit.to_static(model.forward, input_spec=SPEC, backend=backend)
    runs = {False: (eager, eager, make_optimizer("adamw", eager)),
            True: (model, fwd, make_optimizer("adamw", model))}
    for step, (x, y) in enumerate(for_backend(BATCHES, backend)):
        got = {}
        for static, (m, call, opt) in runs.items():
            d2s.seed(100 + step)                       # same dropout masks
            loss = F.cross_entropy(call(t(x)), t(y))
            loss.backward()
            got[static] = (loss.numpy(), grads(m))
            opt.step()
            opt.clear_grad()
            got[static] += (state(m),)
        close(got[True][0], got[False][0], backend, f"step {step}: loss")
        for name, g in got[False][1].items():
            close(got[True][1][name], g, backend, f"step {step}: grad of {name}")
        for name, v in got[False][2].items():
            close(got[True][2][name], v, backend, f"step {step}: {name}")
    # dropout really is on in train mode: two calls with other seeds differ
    x = t(BATCHES[0][0])
    d2s.seed(1)
    a = fwd(x).numpy()
    d2s.seed(2)
    assert not np.array_equal(a, fwd(x).numpy())
    model.eval()
    eager.eval()
    close(fwd(x).numpy(), eager(x).numpy(), backend, "eval output")


def test_vit_save_load_infer(tmp_path):
    model = twins(ViT)[0]
    save_load_infer(model, SPEC, [t(RNG.normal(size=(2, 3, IMG, IMG)))], tmp_path)
