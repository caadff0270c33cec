"""A sentence classifier built from the framework's own transformer layers
(the PaddleNLP fine-tuning shape): token + position embeddings,
`nn.TransformerEncoder` of `nn.TransformerEncoderLayer`s (pre-norm, GELU,
dropout 0 for determinism) with an additive attention mask built from the
padding ids (`[B, 1, 1, S]`, -1e4 on pads), masked mean pooling, and a
classifier; label-smoothed cross-entropy. Variable batch and length."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, save_load_infer, t, train_and_compare, twins
from xla_budget import for_backend

V, D, HEADS, PAD, CLASSES = 15, 8, 2, 0, 3


class Classifier(nn.Layer):
    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(V, D, padding_idx=PAD)
        self.pos = nn.Embedding(16, D)
        layer = nn.TransformerEncoderLayer(D, HEADS, 2 * D, dropout=0.0, activation="gelu",
                                           normalize_before=True)
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(D))
        self.cls = nn.Linear(D, CLASSES)

    def forward(self, ids):
        pos = d2s.arange(0, ids.shape[1], dtype="int64")
        h = self.word(ids) + self.pos(pos)
        keep = (ids != PAD).astype("float32")                          # [B, S]
        mask = ((1.0 - keep) * -1e4).unsqueeze([1, 2])                 # [B, 1, 1, S]
        h = self.encoder(h, src_mask=mask)
        pooled = (h * keep.unsqueeze(-1)).sum(axis=1) / keep.sum(axis=1, keepdim=True)
        return self.cls(pooled)


def smoothed_xent(logits, ids, labels):
    soft = F.label_smooth(F.one_hot(labels, CLASSES), epsilon=0.1)
    return F.cross_entropy(logits, soft, soft_label=True)


RNG = np.random.default_rng(26)


def batch(n, s):
    ids = RNG.integers(1, V, (n, s))
    for i in range(n):
        ids[i, RNG.integers(2, s + 1):] = PAD
    return ids, RNG.integers(0, CLASSES, n)


BATCHES = [batch(3, 6), batch(2, 4), batch(3, 6)]
SPEC = [InputSpec([None, None], "int64")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_builtin_transformer_classifier_trains_like_eager(backend):
    # SGD: the key projection's bias has a zero gradient in exact arithmetic
    # (softmax ignores a per-query constant); Adam would magnify its rounding
    _, _, fn = train_and_compare(Classifier, for_backend(BATCHES, backend), backend, SPEC,
                                 loss=smoothed_xent, opt="sgd", lr=0.1)
    assert len(fn.program_cache) == 1


def test_padding_does_not_change_the_converted_prediction():
    model = twins(Classifier)[0]
    model.eval()
    fn = d2s.jit.to_static(model.forward, input_spec=SPEC)
    ids = RNG.integers(1, V, (1, 4))
    padded = np.concatenate([ids, np.zeros((1, 3), "int64")], axis=1)
    np.testing.assert_allclose(fn(t(padded)).numpy(), fn(t(ids)).numpy(), rtol=1e-5, atol=1e-6)


def test_builtin_transformer_save_load_infer(tmp_path):
    save_load_infer(twins(Classifier)[0], SPEC, [t(BATCHES[1][0])], tmp_path)
