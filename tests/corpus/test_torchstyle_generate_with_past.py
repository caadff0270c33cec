"""HuggingFace-style greedy `generate()`: a Python `for _ in
range(max_new_tokens)` whose first trip runs the whole prompt with
`past_key_values=None` and later trips only the last token with the cache
(`cur = next_tokens[:, None]` after the `if unfinished.max() == 0: break`),
so the value assigned after the tensor `break` has another shape than the
one a trip that stops keeps. Converted on numpy and xla, it must give
eager's tokens whether every row stops at the first trip, later, or never."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F

from harness import BACKENDS, t

V, D = 6, 4


class TinyCausalLM(nn.Layer):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.qkv = nn.Linear(D, 3 * D)
        self.head = nn.Linear(D, V)

    def forward(self, ids, past=None):
        h = self.emb(ids)
        q, k, v = d2s.split(self.qkv(h), 3, axis=-1)
        if past is not None:
            k = d2s.concat([past[0], k], axis=1)
            v = d2s.concat([past[1], v], axis=1)
        w = d2s.matmul(q, k, transpose_y=True) / 2.0
        ql, kl = q.shape[1], k.shape[1]
        mask = d2s.tril(d2s.ones([kl, kl], dtype="bool"))[kl - ql:]
        w = d2s.where(mask, w, d2s.full_like(w, d2s.finfo(w.dtype).min))
        out = d2s.matmul(F.softmax(w, axis=-1), v)
        return self.head(out), (k, v)


def generate(model, input_ids, max_new_tokens: int = 4, eos_token_id: int = 2):
    past = None
    cur = input_ids
    unfinished = d2s.ones([input_ids.shape[0]], dtype="int64")
    for _ in range(max_new_tokens):
        logits, past = model(cur, past)
        next_tokens = d2s.argmax(logits[:, -1, :], axis=-1)
        next_tokens = next_tokens * unfinished + eos_token_id * (1 - unfinished)
        input_ids = d2s.concat([input_ids, next_tokens[:, None]], axis=-1)
        unfinished = unfinished * (next_tokens != eos_token_id).astype("int64")
        if unfinished.max() == 0:
            break
        cur = next_tokens[:, None]
    return input_ids


def _model(bias_to=None):
    d2s.seed(0)
    model = TinyCausalLM()
    if bias_to is not None:  # make `bias_to` the argmax everywhere: every row stops then
        b = np.zeros(V, "float32")
        b[bias_to] = 100.0
        model.head.bias.set_value(b)
    return model


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("eos", [2, 3, 5])
@pytest.mark.parametrize("bias_to", [None, "eos"], ids=["free", "stops_at_once"])
def test_generate_with_past_matches_eager(eos, bias_to, backend):
    model = _model(eos if bias_to == "eos" else None)
    static = d2s.jit.to_static(generate, backend=backend)
    ids = t(np.array([[1, 4, 0], [3, 3, 5]]))
    expected = generate(model, ids, 4, eos).numpy()
    got = static(model, ids, 4, eos).numpy()
    assert got.tolist() == expected.tolist()
    if bias_to == "eos":
        assert expected.shape == (2, 4)  # stopped after the first trip


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_after_a_tensor_continue_may_change_shape(backend):
    """The same relaxation for `continue`: `acc` grows only on trips that go on."""
    def f(x):
        acc = x[:1]
        for i in range(3):
            if x[i].sum() < 0:
                continue
            acc = d2s.concat([acc, x[i:i + 1]])
        return acc

    static = d2s.jit.to_static(f, backend=backend)
    for rows in ([[1.0], [-1.0], [2.0]], [[-1.0], [-2.0], [-3.0]], [[1.0], [1.0], [1.0]]):
        x = t(np.array(rows, "float32"))
        np.testing.assert_array_equal(static(x).numpy(), f(x).numpy())
