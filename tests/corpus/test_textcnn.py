"""TextCNN sentence classifier (Kim-style: embedding, parallel Conv1D of
several widths, max over time, dropout-free head), as ported from a
PaddleNLP/PyTorch text-classification example with a variable sentence length."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, save_load_infer, t, train_and_compare


class TextCNN(nn.Layer):
    def __init__(self, vocab=20, emb=8, filters=4, widths=(2, 3), classes=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.convs = nn.LayerList([nn.Conv1D(emb, filters, w) for w in widths])
        self.fc = nn.Linear(filters * len(widths), classes)

    def forward(self, ids):
        x = self.embedding(ids)                    # [B, T, E]
        x = d2s.transpose(x, [0, 2, 1])            # [B, E, T]
        pooled = []
        for conv in self.convs:
            h = F.relu(conv(x))                    # [B, F, T - w + 1]
            pooled.append(d2s.max(h, axis=-1))     # max over time
        return self.fc(d2s.concat(pooled, axis=1))


SPEC = [InputSpec([None, None], "int64")]
RNG = np.random.default_rng(2)
BATCHES = [(RNG.integers(0, 20, (3, n)), RNG.integers(0, 2, 3)) for n in (6, 9, 5)]


def xent(logits, ids, y):
    return F.cross_entropy(logits, y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_textcnn_trains_like_eager_for_every_length(backend):
    _, _, fwd = train_and_compare(TextCNN, BATCHES, backend, SPEC, loss=xent, opt="adam")
    assert len(fwd.program_cache) == 1              # one program for every batch and length


FIXED = [(RNG.integers(0, 20, (n, 7)), RNG.integers(0, 2, n)) for n in (3, 4, 3)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_textcnn_trains_like_eager_with_padded_length(backend):
    """Sentences padded to one length (the batch size stays None)."""
    _, _, fwd = train_and_compare(TextCNN, FIXED, backend, [InputSpec([None, 7], "int64")],
                                  loss=xent, opt="adam")
    assert len(fwd.program_cache) == 1


@pytest.mark.parametrize("spec", [
    pytest.param([InputSpec([None, 7], "int64")], id="padded"),
    pytest.param(SPEC, id="any-length")])
def test_textcnn_save_load_infer(tmp_path, spec):
    model, _, _ = train_and_compare(TextCNN, FIXED[:1], "numpy", [InputSpec([None, 7], "int64")],
                                    loss=xent)
    save_load_infer(model, spec, [t(RNG.integers(0, 20, (2, 7)))], tmp_path)
