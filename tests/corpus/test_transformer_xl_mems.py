"""A Transformer-XL style segment-recurrent encoder (as ported from
PaddleNLP / HuggingFace's TransfoXL): each call attends over the hidden
states of the previous segment kept in `self.mems` (one per layer, written
in `forward` with `detach()`d new memories, truncated to `mem_len`), the way
such models carry state across calls. The converted forward must write the
memories back after every run exactly as eager does, so that the next
segment sees them; `reset_mems()` clears them between documents."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import (BACKENDS, assert_no_variables_left, close, grads, make_optimizer, state,
                     t, twins)

V, D, MEM, SEG, LAYERS = 11, 8, 4, 4, 2


class XLLayer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(D, D, bias_attr=False)
        self.kv = nn.Linear(D, 2 * D, bias_attr=False)
        self.o = nn.Linear(D, D)
        self.ln1 = nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 2 * D), nn.ReLU(), nn.Linear(2 * D, D))
        self.ln2 = nn.LayerNorm(D)

    def forward(self, h, mem):
        cat = d2s.concat([mem, h], axis=1)                             # [B, M+S, D]
        q = self.q(h)
        k, v = d2s.chunk(self.kv(cat), 2, axis=-1)
        s, m = h.shape[1], mem.shape[1]
        score = d2s.matmul(q, k, transpose_y=True) / D ** 0.5           # [B, S, M+S]
        # query i sees every memory slot and the segment up to itself
        allowed = d2s.tril(d2s.ones([s, m + s], dtype="bool"), diagonal=m)
        score = d2s.where(allowed, score, d2s.full_like(score, -1e9))
        h = self.ln1(h + self.o(d2s.matmul(F.softmax(score, axis=-1), v)))
        return self.ln2(h + self.ff(h))


class TransfoXL(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        self.layers = nn.LayerList([XLLayer() for _ in range(LAYERS)])
        self.out = nn.Linear(D, V)
        self.mems = None

    def reset_mems(self, batch):
        self.mems = [d2s.zeros([batch, MEM, D]) for _ in range(LAYERS + 1)]

    def forward(self, ids, labels):
        h = self.embed(ids)
        hids = [h]
        for i, layer in enumerate(self.layers):
            h = layer(h, self.mems[i])
            hids.append(h)
        # new memories: the last MEM positions of [old mems, this segment]
        new_mems = []
        for mem, hid in zip(self.mems, hids):
            cat = d2s.concat([mem, hid], axis=1)
            new_mems.append(cat[:, -MEM:].detach())
        self.mems = new_mems
        logits = self.out(h)
        return F.cross_entropy(logits.reshape([-1, V]), labels.reshape([-1]))


RNG = np.random.default_rng(17)
DOC = RNG.integers(0, V, (2, 3 * SEG + 1))
SEGMENTS = [(DOC[:, i:i + SEG], DOC[:, i + 1:i + SEG + 1]) for i in range(0, 3 * SEG, SEG)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_transformer_xl_carries_mems_across_converted_calls(backend):
    eager, model = twins(TransfoXL)
    fwd = d2s.jit.to_static(model.forward, backend=backend, input_spec=[
        InputSpec([None, SEG], "int64"), InputSpec([None, SEG], "int64")])
    opts = {False: make_optimizer("adam", eager), True: make_optimizer("adam", model)}
    for doc in range(2):                                   # two documents: mems reset
        eager.reset_mems(2)
        model.reset_mems(2)
        for step, (x, y) in enumerate(SEGMENTS):
            got = {}
            for static, (m, call) in ((False, (eager, eager)), (True, (model, fwd))):
                loss = call(t(x), t(y))
                loss.backward()
                got[static] = (loss.numpy(), grads(m))
                opts[static].step()
                opts[static].clear_grad()
                got[static] += (state(m), [mm.numpy() for mm in m.mems])
            what = f"doc {doc} segment {step}"
            close(got[True][0], got[False][0], backend, f"{what}: loss")
            for name, g in got[False][1].items():
                close(got[True][1][name], g, backend, f"{what}: grad of {name}")
            for name, v in got[False][2].items():
                close(got[True][2][name], v, backend, f"{what}: {name}")
            for i, (a, e) in enumerate(zip(got[True][3], got[False][3])):
                close(a, e, backend, f"{what}: mems[{i}]")
            assert all(isinstance(mm, d2s.Tensor) for mm in model.mems)
            assert_no_variables_left(("model", model), ("mems", model.mems))
        # the memories really moved: the last segment's states are in them
        assert not np.allclose(model.mems[-1].numpy(), 0.0)
