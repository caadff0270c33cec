"""Seq2seq with additive-free (Luong dot) attention: a GRU encoder, a
GRUCell decoder fed the previous token and the attention context, trained
with teacher forcing, decoded greedily with a tensor `while` that stops when
every sequence has emitted EOS, and by a small beam search (the shape of
PaddlePaddle's seq2seq dygraph-to-static test and PyTorch's translation
tutorial)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, infer_and_compare, save_load_infer, t, train_and_compare, twins

V, E, H = 10, 6, 8
BOS, EOS, MAX_LEN = 1, 2, 6


class Seq2Seq(nn.Layer):
    def __init__(self):
        super().__init__()
        self.src_embed = nn.Embedding(V, E)
        self.tgt_embed = nn.Embedding(V, E)
        self.encoder = nn.GRU(E, H)
        self.cell = nn.GRUCell(E + H, H)
        self.attn_out = nn.Linear(2 * H, H)
        self.proj = nn.Linear(H, V)

    def attend(self, h, enc):
        scores = d2s.matmul(enc, h.unsqueeze(2)).squeeze(2)             # [B, S]
        weights = F.softmax(scores, axis=-1)
        ctx = d2s.matmul(weights.unsqueeze(1), enc).squeeze(1)          # [B, H]
        return d2s.tanh(self.attn_out(d2s.concat([h, ctx], axis=-1)))

    def step(self, tok, h, ctx, enc):
        x = d2s.concat([self.tgt_embed(tok), ctx], axis=-1)
        out, h = self.cell(x, h)
        ctx = self.attend(out, enc)
        return self.proj(ctx), h, ctx

    def encode(self, src):
        enc, h = self.encoder(self.src_embed(src))
        return enc, h[0]

    def forward(self, src, tgt_in, tgt_out):
        enc, h = self.encode(src)
        ctx = d2s.zeros([src.shape[0], H])
        logits = []
        for i in range(tgt_in.shape[1]):
            out, h, ctx = self.step(tgt_in[:, i], h, ctx, enc)
            logits.append(out)
        logits = d2s.stack(logits, axis=1)
        return F.cross_entropy(logits.reshape([-1, V]), tgt_out.reshape([-1]))

    def greedy(self, src):
        enc, h = self.encode(src)
        b = src.shape[0]
        ctx = d2s.zeros([b, H])
        tok = d2s.full([b], BOS, dtype="int64")
        done = d2s.zeros([b], dtype="bool")
        out = []
        step = 0
        while step < MAX_LEN and not d2s.all(done):
            logits, h, ctx = self.step(tok, h, ctx, enc)
            tok = d2s.argmax(logits, axis=-1)
            tok = d2s.where(done, d2s.full_like(tok, EOS), tok)
            out.append(tok)
            done = done | (tok == EOS)
            step += 1
        return d2s.stack(out, axis=1)

    def beam_search(self, src, beam=2):
        """Beam search for one source sentence (batch 1)."""
        enc, h = self.encode(src)
        enc = d2s.tile(enc, [beam, 1, 1])
        h = d2s.tile(h, [beam, 1])
        ctx = d2s.zeros([beam, H])
        tok = d2s.full([beam], BOS, dtype="int64")
        scores = d2s.to_tensor([0.0] + [-1e9] * (beam - 1))
        history = []
        for _ in range(MAX_LEN):
            logits, h, ctx = self.step(tok, h, ctx, enc)
            total = scores.unsqueeze(1) + F.log_softmax(logits, axis=-1)    # [beam, V]
            scores, flat = d2s.topk(total.reshape([-1]), beam)
            parent = flat // V
            tok = flat % V
            h, ctx = d2s.gather(h, parent), d2s.gather(ctx, parent)
            history.append((parent, tok))
        best = d2s.argmax(scores)
        seq = []
        for parent, tok in history[::-1]:
            seq.append(tok[best])
            best = parent[best]
        return d2s.stack(seq[::-1]), scores


RNG = np.random.default_rng(9)


def batch(n, s, tl):
    src = RNG.integers(3, V, (n, s))
    tgt = np.concatenate([np.full((n, 1), BOS), RNG.integers(3, V, (n, tl)),
                          np.full((n, 1), EOS)], axis=1)
    return src, tgt[:, :-1], tgt[:, 1:]


BATCHES = [batch(3, 4, 3), batch(2, 4, 3), batch(3, 4, 3)]
SPEC = [InputSpec([None, 4], "int64"), InputSpec([None, 4], "int64"),
        InputSpec([None, 4], "int64")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_seq2seq_teacher_forcing_trains_like_eager(backend):
    train_and_compare(Seq2Seq, BATCHES, backend, SPEC, opt="adam", lr=0.02)


@pytest.mark.parametrize("backend", BACKENDS)
def test_seq2seq_greedy_decoding_with_early_stop(backend):
    eager, model = twins(Seq2Seq)
    dec = d2s.jit.to_static(model.greedy, input_spec=[InputSpec([None, 4], "int64")],
                            backend=backend)
    out = infer_and_compare(eager.greedy, dec, [t(BATCHES[0][0])], backend)
    assert out.shape[0] == 3 and 1 <= out.shape[1] <= MAX_LEN


@pytest.mark.parametrize("backend", BACKENDS)
def test_seq2seq_beam_search(backend):
    eager, model = twins(Seq2Seq)
    dec = d2s.jit.to_static(model.beam_search, input_spec=[InputSpec([1, 4], "int64")],
                            backend=backend)
    infer_and_compare(eager.beam_search, dec, [t(BATCHES[0][0][:1])], backend)


def test_seq2seq_greedy_save_load_infer(tmp_path):
    model = twins(Seq2Seq)[0]

    class Translator(nn.Layer):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, src):
            return self.m.greedy(src)

    save_load_infer(Translator(model), [InputSpec([None, 4], "int64")],
                    [t(BATCHES[1][0])], tmp_path)
