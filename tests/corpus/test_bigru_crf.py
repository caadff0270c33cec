"""A BiGRU-CRF sequence tagger (the PaddleNLP lexical-analysis / PyTorch
BiLSTM-CRF tutorial shape): embeddings, a bidirectional GRU, emission
scores, a linear-chain CRF whose negative log-likelihood runs the forward
algorithm over time, and Viterbi decoding with back-pointers kept in a list
and followed backwards."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.static import InputSpec

from harness import BACKENDS, infer_and_compare, t, train_and_compare, twins

V, E, H, K = 12, 5, 6, 4


class BiGRUCRF(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, E)
        self.gru = nn.GRU(E, H, direction="bidirect")
        self.emit = nn.Linear(2 * H, K)
        self.trans = self.create_parameter([K, K])
        self.start = self.create_parameter([K])

    def emissions(self, ids):
        out, _ = self.gru(self.embed(ids))
        return self.emit(out)                                   # [B, T, K]

    def forward(self, ids, tags):
        em = self.emissions(ids)
        b, steps = ids.shape[0], ids.shape[1]
        # score of the gold path
        gold = self.start[tags[:, 0]] + d2s.take_along_axis(em[:, 0], tags[:, :1], 1)[:, 0]
        for i in range(1, steps):
            prev, cur = tags[:, i - 1], tags[:, i]
            gold = gold + self.trans[prev, cur] \
                + d2s.take_along_axis(em[:, i], tags[:, i:i + 1], 1)[:, 0]
        # log partition function: the forward algorithm
        alpha = self.start.unsqueeze(0) + em[:, 0]             # [B, K]
        for i in range(1, steps):
            alpha = d2s.logsumexp(alpha.unsqueeze(2) + self.trans.unsqueeze(0), axis=1) + em[:, i]
        log_z = d2s.logsumexp(alpha, axis=1)
        return d2s.mean(log_z - gold)

    def decode(self, ids):
        em = self.emissions(ids)
        steps = ids.shape[1]
        score = self.start.unsqueeze(0) + em[:, 0]
        backpointers = []
        for i in range(1, steps):
            total = score.unsqueeze(2) + self.trans.unsqueeze(0)   # [B, K_prev, K]
            backpointers.append(d2s.argmax(total, axis=1))
            score = d2s.max(total, axis=1) + em[:, i]
        best = d2s.argmax(score, axis=1)
        path = [best]
        for bp in backpointers[::-1]:
            best = d2s.take_along_axis(bp, best.unsqueeze(1), 1)[:, 0]
            path.append(best)
        path = path[::-1]
        return d2s.stack(path, axis=1), d2s.max(score, axis=1)


RNG = np.random.default_rng(7)
BATCHES = [(RNG.integers(0, V, (3, 5)), RNG.integers(0, K, (3, 5))) for _ in range(3)]
SPEC = [InputSpec([None, 5], "int64"), InputSpec([None, 5], "int64")]


def brute_force_viterbi(model, ids):
    """Best path by enumerating every tag sequence (tiny T and K)."""
    import itertools
    em = model.emissions(d2s.to_tensor(ids)).numpy()
    tr, st = model.trans.numpy(), model.start.numpy()
    paths = []
    for e in em:
        best = max(itertools.product(range(K), repeat=e.shape[0]),
                   key=lambda p: st[p[0]] + sum(e[i, p[i]] for i in range(len(p)))
                   + sum(tr[p[i - 1], p[i]] for i in range(1, len(p))))
        paths.append(best)
    return np.array(paths)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bigru_crf_nll_trains_like_eager(backend):
    train_and_compare(BiGRUCRF, BATCHES, backend, SPEC, opt="adam", lr=0.05)


@pytest.mark.parametrize("backend", BACKENDS)
def test_viterbi_decode_matches_eager_and_brute_force(backend):
    eager, model = twins(BiGRUCRF)
    dec = d2s.jit.to_static(model.decode, input_spec=[InputSpec([None, 4], "int64")],
                            backend=backend)
    ids = RNG.integers(0, V, (2, 4))
    paths, _ = infer_and_compare(eager.decode, dec, [t(ids)], backend)
    np.testing.assert_array_equal(paths, brute_force_viterbi(eager, ids))
