"""Incremental decoding with Paddle's own transformer caches, as PaddleNLP's
generation code writes it: `cache = decoder.gen_cache(memory)` (empty
self-attention caches shaped for the batch), then one token per step through
`decoder(tgt, memory, None, None, cache)` returning the grown caches; under
an InputSpec with a `None` batch, and in a `while` that stops once every
sequence emitted EOS."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.static import InputSpec

from harness import BACKENDS, infer_and_compare, t, twins

V, D, BOS, EOS = 9, 8, 1, 2


class Generator(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, 2, 16, dropout=0.0), 2)
        self.proj = nn.Linear(D, V)

    def step(self, tok, memory, cache):
        out, cache = self.decoder(self.embed(tok), memory, None, None, cache)
        return self.proj(out[:, -1]).argmax(-1, keepdim=True), cache

    def forward(self, memory):                                     # fixed number of steps
        tok = d2s.full([memory.shape[0], 1], BOS, dtype="int64")
        cache = self.decoder.gen_cache(memory)
        out = []
        for _ in range(4):
            tok, cache = self.step(tok, memory, cache)
            out.append(tok)
        return d2s.concat(out, axis=1)

    def until_eos(self, memory):
        tok = d2s.full([memory.shape[0], 1], BOS, dtype="int64")
        cache = self.decoder.gen_cache(memory)
        done = d2s.zeros([memory.shape[0], 1], dtype="bool")
        out = d2s.zeros([memory.shape[0], 0], dtype="int64")
        steps = 0
        while steps < 6 and not done.all():
            tok, cache = self.step(tok, memory, cache)
            tok = d2s.where(done, d2s.full_like(tok, EOS), tok)
            out = d2s.concat([out, tok], axis=1)
            done = done | (tok == EOS)
            steps += 1
        return out


RNG = np.random.default_rng(43)
SPEC = [InputSpec([None, None, D])]


@pytest.mark.parametrize("backend", BACKENDS)
def test_fixed_steps_with_gen_cache_and_any_batch(backend):
    eager, model = twins(Generator)
    fn = d2s.jit.to_static(model, input_spec=SPEC, backend=backend)
    for b in (2, 3):
        infer_and_compare(eager, fn, [t(RNG.normal(size=(b, 5, D)))], backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_decoding_until_eos_grows_the_caches_in_a_while(backend):
    eager, model = twins(Generator)
    fn = d2s.jit.to_static(model.until_eos, input_spec=SPEC, backend=backend)
    for b in (1, 3):
        infer_and_compare(eager.until_eos, fn, [t(RNG.normal(size=(b, 4, D)))], backend)
