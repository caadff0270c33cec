"""DeepFM for CTR prediction (as in PaddleRec): sparse feature ids per
field looked up in a first-order `Embedding` (width 1) and a second-order
one, the FM interaction written the usual way
`0.5 * (sum(v)^2 - sum(v^2))` with `sum`/`pow`, a deep MLP over the
concatenated field embeddings, a dense-feature branch, and a sigmoid
binary cross-entropy. Variable batch; an L2 penalty on the embeddings is
added in the loss, as PaddleRec's config does."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, save_load_infer, t, train_and_compare
from xla_budget import for_backend

FIELDS, VOCAB, K, DENSE = 4, 20, 3, 2


class DeepFM(nn.Layer):
    def __init__(self):
        super().__init__()
        init = nn.initializer.TruncatedNormal(std=0.1)
        self.first = nn.Embedding(VOCAB, 1, weight_attr=d2s.ParamAttr(initializer=init))
        self.second = nn.Embedding(VOCAB, K, weight_attr=d2s.ParamAttr(initializer=init))
        self.dense_w = self.create_parameter([DENSE], default_initializer=nn.initializer.Constant(0.1))
        self.bias = self.create_parameter([1], is_bias=True)
        layers, width = [], FIELDS * K + DENSE
        for hidden in (8, 4):
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, 1))
        self.dnn = nn.Sequential(*layers)

    def forward(self, sparse_ids, dense, label):
        # first order: w_i of every id, plus the dense features' weights
        y_first = d2s.sum(self.first(sparse_ids), axis=1) + d2s.sum(
            dense * self.dense_w, axis=1, keepdim=True)
        # second order: 0.5 * ((sum_i v_i)^2 - sum_i v_i^2), summed over k
        emb = self.second(sparse_ids)                                  # [B, F, K]
        square_of_sum = d2s.pow(d2s.sum(emb, axis=1), 2)
        sum_of_square = d2s.sum(d2s.pow(emb, 2), axis=1)
        y_second = 0.5 * d2s.sum(square_of_sum - sum_of_square, axis=1, keepdim=True)
        deep_in = d2s.concat([emb.reshape([-1, FIELDS * K]), dense], axis=1)
        y_dnn = self.dnn(deep_in)
        logit = y_first + y_second + y_dnn + self.bias
        loss = F.binary_cross_entropy_with_logits(logit, label.astype("float32"))
        reg = 1e-4 * (d2s.pow(emb, 2).sum() / emb.shape[0])
        return loss + reg


SPEC = [InputSpec([None, FIELDS], "int64"), InputSpec([None, DENSE], "float32"),
        InputSpec([None, 1], "int64")]
RNG = np.random.default_rng(16)
BATCHES = [(RNG.integers(0, VOCAB, (n, FIELDS)), RNG.normal(size=(n, DENSE)),
            RNG.integers(0, 2, (n, 1))) for n in (5, 3, 5, 5)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_deepfm_trains_like_eager(backend):
    _, _, fwd = train_and_compare(DeepFM, for_backend(BATCHES, backend), backend, SPEC, opt="adam", lr=0.05)
    assert len(fwd.program_cache) == 1


def test_deepfm_save_load_infer(tmp_path):
    save_load_infer(DeepFM(), SPEC, [t(b) for b in BATCHES[0]], tmp_path)
