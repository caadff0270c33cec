"""A decoder-only transformer with greedy generation over key/value caches:
each layer's cache is a dict `{"k": ..., "v": ...}` in a per-layer list that
the attention layer updates (`cache["k"] = concat([cache["k"], k])`) inside
the tensor `while` that generates tokens — the GPT-2 / PaddleNLP generation
pattern. Training runs the same layers without a cache; generation is
checked against eager and against re-running the full prefix without cache."""
import contextlib

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec
from d2s.static.backend import BackendFallbackWarning

from harness import (BACKENDS, as_numpy, close_tree, infer_and_compare, save_load_infer, t,
                     train_and_compare, twins)

V, D, NH, LAYERS, MAX_POS = 12, 8, 2, 2, 16
HD = D // NH
EOS = 0


class SelfAttention(nn.Layer):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, D)

    def split(self, x):
        b, s = x.shape[0], x.shape[1]
        return x.reshape([b, s, NH, HD]).transpose([0, 2, 1, 3])

    def forward(self, x, cache=None):
        q, k, v = d2s.split(self.qkv(x), 3, axis=-1)
        q, k, v = self.split(q), self.split(k), self.split(v)
        if cache is not None:
            k = d2s.concat([cache["k"], k], axis=2)
            v = d2s.concat([cache["v"], v], axis=2)
            cache["k"], cache["v"] = k, v
        scores = d2s.matmul(q, k, transpose_y=True) / (HD ** 0.5)
        if cache is None:               # training: causal mask over the whole sequence
            s = x.shape[1]
            scores = scores + d2s.triu(d2s.full([s, s], -1e9), diagonal=1)
        att = d2s.matmul(F.softmax(scores, axis=-1), v)
        b, s = x.shape[0], x.shape[1]
        return self.out(att.transpose([0, 2, 1, 3]).reshape([b, s, D]))


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(D), SelfAttention()
        self.ln2, self.ff = nn.LayerNorm(D), nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(),
                                                           nn.Linear(2 * D, D))

    def forward(self, x, cache=None):
        x = x + self.attn(self.ln1(x), cache)
        return x + self.ff(self.ln2(x))


class GPT(nn.Layer):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Embedding(MAX_POS, D)
        self.blocks = nn.LayerList([Block() for _ in range(LAYERS)])
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, V)

    def logits(self, ids, start=0, caches=None):
        pos = d2s.arange(ids.shape[1]) + start
        h = self.tok(ids) + self.pos(pos)
        for i, block in enumerate(self.blocks):
            h = block(h, None if caches is None else caches[i])
        return self.head(self.ln(h))

    def forward(self, ids):
        logits = self.logits(ids)
        return F.cross_entropy(logits[:, :-1].reshape([-1, V]), ids[:, 1:].reshape([-1]))

    def generate(self, prompt, max_new=4):
        b = prompt.shape[0]
        caches = [{"k": d2s.zeros([b, NH, 0, HD]), "v": d2s.zeros([b, NH, 0, HD])}
                  for _ in range(LAYERS)]
        logits = self.logits(prompt, 0, caches)
        tok = d2s.argmax(logits[:, -1], axis=-1)
        out = [tok]
        step = d2s.zeros([], "int64")
        pos = prompt.shape[1]
        while step < max_new - 1:
            logits = self.logits(tok.unsqueeze(1), pos + step, caches)
            tok = d2s.argmax(logits[:, -1], axis=-1)
            out.append(tok)
            step += 1
        return d2s.stack(out, axis=1)

    def generate_without_cache(self, prompt, max_new=4):
        ids = prompt
        for _ in range(max_new):
            tok = d2s.argmax(self.logits(ids)[:, -1], axis=-1)
            ids = d2s.concat([ids, tok.unsqueeze(1)], axis=1)
        return ids[:, prompt.shape[1]:]


RNG = np.random.default_rng(10)
BATCHES = [(RNG.integers(0, V, (2, 6)),) for _ in range(3)]
SPEC = [InputSpec([None, 6], "int64")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpt_trains_like_eager(backend):
    # SGD: the key bias has an exactly-zero true gradient (softmax ignores a
    # per-row shift), and Adam would scale its rounding noise up to the step size
    train_and_compare(GPT, BATCHES, backend, SPEC, opt="sgd", lr=0.1)


def _growing_cache(backend):
    """The caches grow per step: on xla the loop runs on numpy, and says so
    (docs/backends.md: an XLA loop carries one shape)."""
    if backend != "xla":
        return contextlib.nullcontext()
    return pytest.warns(BackendFallbackWarning, match="changes shape in the loop")


@pytest.mark.parametrize("backend", BACKENDS)
def test_greedy_generation_over_per_layer_kv_caches(backend):
    eager, model = twins(GPT)
    gen = d2s.jit.to_static(model.generate, input_spec=[InputSpec([2, 3], "int64")],
                            backend=backend)
    prompt = t(RNG.integers(0, V, (2, 3)))
    with _growing_cache(backend):
        out = infer_and_compare(eager.generate, gen, [prompt], backend)
    np.testing.assert_array_equal(out, eager.generate_without_cache(prompt).numpy())
    assert "while" in [op.type for op in gen.get_concrete_program(prompt).main_program.all_ops()]


def test_gpt_generation_save_load_infer(tmp_path):
    model = twins(GPT)[0]

    class Generator(nn.Layer):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, prompt):
            return self.m.generate(prompt)

    save_load_infer(Generator(model), [InputSpec([2, 3], "int64")],
                    [t(RNG.integers(0, V, (2, 3)))], tmp_path)


def _update(cache, k):
    cache["k"] = d2s.concat([cache["k"], k], axis=1)


def test_callee_updating_a_dict_inside_a_tensor_while():
    """The pattern above in five lines (issue 25 item 3 names it)."""
    def grow(x):
        cache = {"k": d2s.zeros([2, 1])}
        i = d2s.zeros([], "int64")
        while i < 3:
            _update(cache, x)
            i += 1
        return cache["k"]

    x = t(np.ones((2, 1)))
    np.testing.assert_array_equal(d2s.jit.to_static(grow)(x).numpy(), grow(x).numpy())


# ---- the same per-layer cache update, written the other ways ported code writes it ----
def _block(h, cache):
    k = d2s.concat([cache["k"], h], axis=1)
    return k.sum(axis=1, keepdim=True), {"k": k}


def cache_by_index(x):
    """`caches[i]["k"] = ...` in a Python `for` over the layers."""
    caches = [{"k": d2s.zeros([2, 1])} for _ in range(LAYERS)]
    step = d2s.zeros([], "int64")
    while step < 3:
        for i in range(LAYERS):
            caches[i]["k"] = d2s.concat([caches[i]["k"], x], axis=1)
        step += 1
    return caches[-1]["k"]


def cache_rebuilt(x):
    """Each layer returns its new cache; the list is rebuilt (PaddleNLP's style)."""
    caches = [{"k": d2s.zeros([2, 1])} for _ in range(LAYERS)]
    step = d2s.zeros([], "int64")
    h = x
    while step < 3:
        new_caches = []
        for i in range(LAYERS):
            h, c = _block(h, caches[i])
            new_caches.append(c)
        caches = new_caches
        step += 1
    return caches[-1]["k"], h


def cache_item_assigned(x):
    """`h, caches[i] = layer(h, caches[i])`."""
    caches = [{"k": d2s.zeros([2, 1])} for _ in range(LAYERS)]
    step = d2s.zeros([], "int64")
    h = x
    while step < 3:
        for i in range(LAYERS):
            h, caches[i] = _block(h, caches[i])
        step += 1
    return caches[-1]["k"], h


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [cache_by_index, cache_rebuilt, cache_item_assigned])
def test_kv_cache_update_styles_inside_a_tensor_while(fn, backend):
    x = t(np.ones((2, 1)))
    expected = as_numpy(fn(x))
    with _growing_cache(backend):
        got = as_numpy(d2s.jit.to_static(fn, backend=backend)(x))
    close_tree(got, expected, backend, "cache")
