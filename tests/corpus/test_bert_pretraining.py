"""BERT-style pretraining heads on a tiny encoder (token + segment +
position embeddings, `nn.TransformerEncoder`, a tanh pooler on [CLS]), with
the masked-LM head gathering the masked positions from the flattened
sequence output (its decoder tied to the word embeddings) and the
next-sentence head on the pooled output — the layout of BertForPretraining
in PaddleNLP and HF."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, save_load_infer, t, train_and_compare

V, D, NH, FF, MAX_POS = 20, 8, 2, 16, 16


class TinyBert(nn.Layer):
    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(V, D)
        self.pos = nn.Embedding(MAX_POS, D)
        self.seg = nn.Embedding(2, D)
        self.emb_norm = nn.LayerNorm(D)
        layer = nn.TransformerEncoderLayer(D, NH, FF, dropout=0.0, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.pooler = nn.Linear(D, D)

    def forward(self, ids, segments, attn_mask):
        pos = d2s.arange(ids.shape[1]).unsqueeze(0)
        h = self.emb_norm(self.word(ids) + self.pos(pos) + self.seg(segments))
        # [B, S] 1/0 padding mask -> additive [B, 1, 1, S]
        mask = (1.0 - attn_mask.astype("float32")).unsqueeze([1, 2]) * -1e4
        seq = self.encoder(h, mask)
        pooled = d2s.tanh(self.pooler(seq[:, 0]))
        return seq, pooled


class BertPretraining(nn.Layer):
    def __init__(self):
        super().__init__()
        self.bert = TinyBert()
        self.transform = nn.Linear(D, D)
        self.transform_norm = nn.LayerNorm(D)
        self.mlm_bias = self.create_parameter([V], is_bias=True)
        self.nsp = nn.Linear(D, 2)

    def forward(self, ids, segments, attn_mask, masked_positions, masked_labels, nsp_labels):
        seq, pooled = self.bert(ids, segments, attn_mask)
        flat = seq.reshape([-1, seq.shape[-1]])
        picked = d2s.gather(flat, masked_positions)        # positions in the flattened batch
        h = self.transform_norm(F.gelu(self.transform(picked)))
        mlm_logits = d2s.matmul(h, self.bert.word.weight, transpose_y=True) + self.mlm_bias
        mlm_loss = F.cross_entropy(mlm_logits, masked_labels)
        nsp_loss = F.cross_entropy(self.nsp(pooled), nsp_labels)
        return mlm_loss + nsp_loss


RNG = np.random.default_rng(11)


def batch(b, s, n_masked):
    ids = RNG.integers(1, V, (b, s))
    segments = (np.arange(s)[None] >= s // 2).astype("int64").repeat(b, 0)
    attn = np.ones((b, s), "int64")
    attn[0, -2:] = 0                                        # padding on the first example
    positions = np.sort(RNG.choice(b * s, n_masked, replace=False))
    return ids, segments, attn, positions, RNG.integers(0, V, n_masked), RNG.integers(0, 2, b)


BATCHES = [batch(2, 6, 3), batch(3, 5, 4), batch(2, 6, 3)]
SPEC = [InputSpec([None, None], "int64"), InputSpec([None, None], "int64"),
        InputSpec([None, None], "int64"), InputSpec([None], "int64"),
        InputSpec([None], "int64"), InputSpec([None], "int64")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_bert_mlm_and_nsp_losses_train_like_eager(backend):
    # the key projection's bias has an exactly-zero true gradient (softmax
    # ignores a per-row shift): Adam would blow xla's rounding noise in it up to
    # the step size, so xla's run uses SGD; numpy's is bitwise under AdamW
    opt = "adamw" if backend == "numpy" else "sgd"
    _, _, fwd = train_and_compare(BertPretraining, BATCHES, backend, SPEC, opt=opt, lr=0.01)
    assert len(fwd.program_cache) == 1


def test_bert_encoder_save_load_infer(tmp_path):
    model, _, _ = train_and_compare(BertPretraining, BATCHES[:1], "numpy", SPEC)
    ids, seg, attn = BATCHES[1][:3]
    save_load_infer(model.bert, SPEC[:3], [t(ids), t(seg), t(attn)], tmp_path)
