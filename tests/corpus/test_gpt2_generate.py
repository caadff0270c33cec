"""A GPT-2 style decoder (HuggingFace / PaddleNLP shape): token and learned
position embeddings, pre-norm blocks with a causal mask from `tril`, an LM
head tied to the token embedding (`matmul(h, wte.weight, transpose_y=True)`),
and the two ways users decode: `generate()` with a Python
`for _ in range(max_new_tokens)` that grows `input_ids` by `concat` and
`break`s once every row emitted EOS (`early_stopping`, as HuggingFace's
greedy search does), and a batched beam search with
per-beam scores, `topk` over beam*vocab, `gather` of the surviving beams'
histories and a finished mask that freezes finished beams."""
import contextlib

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec
from d2s.static.backend import BackendFallbackWarning

from harness import BACKENDS, infer_and_compare, t, train_and_compare, twins
from xla_budget import for_backend

V, D, HEADS, CTX = 12, 8, 2, 16
EOS = 2


class CausalSelfAttention(nn.Layer):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(D, 3 * D)
        self.c_proj = nn.Linear(D, D)

    def forward(self, x):
        b, s = x.shape[0], x.shape[1]
        q, k, v = d2s.split(self.c_attn(x), 3, axis=-1)
        q = q.reshape([b, s, HEADS, D // HEADS]).transpose([0, 2, 1, 3])
        k = k.reshape([b, s, HEADS, D // HEADS]).transpose([0, 2, 1, 3])
        v = v.reshape([b, s, HEADS, D // HEADS]).transpose([0, 2, 1, 3])
        w = d2s.matmul(q, k, transpose_y=True) / (D // HEADS) ** 0.5
        mask = d2s.tril(d2s.ones([s, s], dtype="bool"))
        w = d2s.where(mask, w, d2s.full_like(w, -1e4))
        y = d2s.matmul(F.softmax(w, axis=-1), v).transpose([0, 2, 1, 3]).reshape([b, s, D])
        return self.c_proj(y)


class GPT2Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(approximate=True),
                                 nn.Linear(4 * D, D))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Layer):
    def __init__(self, n_layer=2):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.wpe = nn.Embedding(CTX, D)
        self.h = nn.LayerList([GPT2Block() for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(D)

    def forward(self, input_ids):
        pos = d2s.arange(0, input_ids.shape[1], dtype="int64").unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return d2s.matmul(self.ln_f(x), self.wte.weight, transpose_y=True)

    def lm_loss(self, input_ids):
        logits = self(input_ids)[:, :-1]
        return F.cross_entropy(logits.reshape([-1, V]), input_ids[:, 1:].reshape([-1]))

    def generate(self, input_ids, max_new_tokens=4, early_stopping=True):
        finished = d2s.zeros([input_ids.shape[0], 1], dtype="bool")
        for _ in range(max_new_tokens):
            logits = self(input_ids)[:, -1, :]
            next_tok = d2s.argmax(logits, axis=-1, keepdim=True)
            next_tok = d2s.where(finished, d2s.full_like(next_tok, EOS), next_tok)
            input_ids = d2s.concat([input_ids, next_tok], axis=1)
            finished = finished | (next_tok == EOS)
            if early_stopping and finished.all():
                break
        return input_ids

    def beam_search(self, input_ids, num_beams=2, max_new_tokens=3):
        b, s = input_ids.shape[0], input_ids.shape[1]
        ids = input_ids.unsqueeze(1).expand([b, num_beams, s]).reshape([b * num_beams, s])
        scores = d2s.to_tensor([0.0] + [-1e9] * (num_beams - 1)).tile([b])    # [b*beams]
        finished = d2s.zeros([b * num_beams], dtype="bool")
        for _ in range(max_new_tokens):
            logp = F.log_softmax(self(ids)[:, -1, :], axis=-1)                   # [b*beams, V]
            # a finished beam only extends with EOS at no cost
            eos_only = d2s.where(d2s.arange(0, V) == EOS, d2s.zeros([V]), d2s.full([V], -1e9))
            logp = d2s.where(finished.unsqueeze(1), eos_only.unsqueeze(0), logp)
            cand = (scores.unsqueeze(1) + logp).reshape([b, num_beams * V])
            top_scores, top_idx = d2s.topk(cand, num_beams, axis=-1)              # [b, beams]
            parent = top_idx // V + d2s.arange(0, b, dtype="int64").unsqueeze(1) * num_beams
            tok = (top_idx % V).reshape([-1, 1])
            ids = d2s.concat([d2s.gather(ids, parent.reshape([-1])), tok], axis=1)
            finished = d2s.gather(finished, parent.reshape([-1])) | (tok.reshape([-1]) == EOS)
            scores = top_scores.reshape([-1])
        best = d2s.argmax(scores.reshape([b, num_beams]), axis=-1)
        rows = best + d2s.arange(0, b, dtype="int64") * num_beams
        return d2s.gather(ids, rows), d2s.gather(scores, rows)


RNG = np.random.default_rng(14)
BATCHES = [(RNG.integers(0, V, (n, s)),) for n, s in ((3, 6), (2, 4), (3, 6))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpt2_lm_trains_like_eager(backend):
    # SGD: the attention's key bias has a zero gradient in exact arithmetic,
    # which Adam's normalisation would turn from rounding noise into steps
    train_and_compare(GPT2, for_backend(BATCHES, backend), backend, [InputSpec([None, None], "int64")],
                      method="lm_loss", opt="sgd", lr=0.1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpt2_generate_without_early_stopping(backend):
    eager, model = twins(GPT2)
    gen = d2s.jit.to_static(model.generate, backend=backend)
    prompts = [t(RNG.integers(3, V, (2, 3))), 4, False]
    out = infer_and_compare(eager.generate, gen, prompts, backend)
    assert out.shape == (2, 7)


def eos_loving_twins():
    """A model whose LM head prefers EOS: eagerly, the `break` fires after
    the first new token."""
    eager, model = twins(GPT2)
    for m in (eager, model):
        w = m.wte.weight.numpy().copy()
        w[EOS] = 10.0 * np.sign(w[EOS] + 1e-3)
        m.wte.weight.set_value(w)
        m.ln_f.weight.set_value(np.abs(m.ln_f.weight.numpy()) + 1.0)
    return eager, model


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpt2_generate_with_break_on_eos(backend):
    """The unrolled trips after the `break` grow `input_ids`: its length is
    a run-time dim (one program for every length the break leaves). XLA
    needs one shape per `cond` output, so that program runs on numpy."""
    eager, model = eos_loving_twins()
    prompts = [t(RNG.integers(3, V, (2, 3)))]
    assert eager.generate(*prompts).shape[1] < 3 + 4      # the break fired eagerly
    gen = d2s.jit.to_static(model.generate, backend=backend)
    with _falls_back(backend):
        infer_and_compare(eager.generate, gen, prompts, backend)
    # a model that never emits EOS: every trip runs, the same program serves
    eager, model = twins(GPT2)
    assert eager.generate(*prompts).shape[1] == 3 + 4
    gen = d2s.jit.to_static(model.generate, backend=backend)
    with _falls_back(backend):
        infer_and_compare(eager.generate, gen, prompts, backend)
    assert len(gen.program_cache) == 1


def _falls_back(backend):
    if backend == "numpy":
        return contextlib.nullcontext()
    return pytest.warns(BackendFallbackWarning, match="cond.*different types or shapes")


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpt2_beam_search_with_finished_mask(backend):
    eager, model = twins(GPT2)
    bs = d2s.jit.to_static(model.beam_search, backend=backend,
                           input_spec=[InputSpec([None, 3], "int64")])
    infer_and_compare(eager.beam_search, bs, [t(RNG.integers(3, V, (2, 3)))], backend)
