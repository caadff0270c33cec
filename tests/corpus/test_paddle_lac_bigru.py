"""The BiGRU tagger of PaddlePaddle's dygraph-to-static LAC test, as users
port it: a hand-written DynamicGRU loops over `inputs.shape[1]` (unknown:
InputSpec [None, None], so a tensor loop), slices with `paddle.slice(...,
starts=[j], ends=[j + 1])`, collects steps in a list and, for the reverse
direction, flips it with `res = res[::-1]` before `paddle.concat(res,
axis=1)`. Training (loss, gradients, Adam steps) runs converted as eagerly
on numpy and xla."""
import numpy as np
import pytest

import d2s as paddle
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

import harness
from harness import BACKENDS, as_numpy, close_tree, t, train_and_compare


class DynamicGRU(nn.Layer):
    def __init__(self, size, h_0=None, is_reverse=False):
        super().__init__()
        self.gru_unit = nn.GRUCell(size * 3, size)
        self.size = size
        self.h_0 = h_0
        self.is_reverse = is_reverse
    def forward(self, inputs):
        hidden = paddle.to_tensor(self.h_0)
        hidden.stop_gradient = True
        res = []
        for i in range(inputs.shape[1]):
            if self.is_reverse:
                j = paddle.shape(inputs)[1] - 1 - i
            else:
                j = i
            input_ = paddle.slice(inputs, axes=[1], starts=[j], ends=[j + 1])
            input_ = paddle.reshape(input_, [-1, input_.shape[2]])
            hidden, _ = self.gru_unit(input_, hidden)
            hidden_ = paddle.reshape(hidden, [-1, 1, hidden.shape[1]])
            res.append(hidden_)
        if self.is_reverse:
            res = res[::-1]
        res = paddle.concat(res, axis=1)
        return res

class Lex(nn.Layer):
    def __init__(self, B=2, V=10, H=4, L=3):
        super().__init__()
        self.emb = nn.Embedding(V, H, weight_attr=paddle.ParamAttr(learning_rate=1.0, name="word_emb",
                                initializer=nn.initializer.Uniform(-0.1, 0.1)))
        h_0 = paddle.to_tensor(np.zeros((B, H), "float32"))
        self.pre = nn.Linear(H, H * 3, weight_attr=paddle.ParamAttr(regularizer=paddle.regularizer.L2Decay(1e-4)))
        self.pre_r = nn.Linear(H, H * 3)
        self.gru = DynamicGRU(H, h_0)
        self.gru_r = DynamicGRU(H, h_0, is_reverse=True)
        self.fc = nn.Linear(2 * H, L)
    def forward(self, word, target, length=None):
        e = self.emb(word)
        out = paddle.concat([self.gru(self.pre(e)), self.gru_r(self.pre_r(e))], axis=-1)
        em = self.fc(out)
        mask = F.sequence_mask(length, maxlen=paddle.shape(word)[1], dtype="float32")
        loss = F.cross_entropy(em, target.unsqueeze(-1), reduction="none").squeeze(-1) * mask
        return paddle.mean(x=loss.sum(axis=1)), paddle.argmax(em, axis=-1)


SPEC = [InputSpec([None, None], "int64"), InputSpec([None, None], "int64"),
        InputSpec([None], "int64")]


# On xla the GRU outputs, arrays whose length (the sentence length) is a run-time
# value, cannot be concatenated by XLA: that program runs on numpy, and says so.
@pytest.mark.filterwarnings("ignore:.*reads a tensor array, whose length is a run-time value")
@pytest.mark.parametrize("backend", BACKENDS)
def test_bigru_tagger_trains_as_eagerly(backend, monkeypatch):
    # The embedding's gradient sums both directions' contributions; the
    # program adds them in another order than the eager tape (float32
    # rounding), so numpy is compared closely here rather than bitwise.
    monkeypatch.setitem(harness.TOL, "numpy", dict(rtol=1e-5, atol=1e-7))
    rng = np.random.default_rng(0)
    batches = [(rng.integers(0, 10, (2, n)), rng.integers(0, 3, (2, n)), np.array([n, n - 1]))
               for n in (4, 5)]
    train_and_compare(Lex, batches, backend, input_spec=SPEC, loss=lambda out, *b: out[0])


def _steps(x):
    res = []
    for i in range(x.shape[1]):
        res.append(x[:, i] * (i + 1))
    rev = res[::-1]
    tail = res[1:]
    return paddle.concat(rev, axis=0), paddle.stack(tail, axis=1), rev[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_slice_of_a_list_from_a_tensor_loop_stays_a_list(backend):
    static = paddle.jit.to_static(_steps, backend=backend, input_spec=[InputSpec([2, None])])
    for n in (3, 4):
        x = t(np.arange(2 * n, dtype="float32").reshape(2, n))
        close_tree(as_numpy(static(x)), as_numpy(_steps(x)), backend, f"{n} steps")
