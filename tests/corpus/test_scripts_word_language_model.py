"""The word-level language model example script ported to Paddle names:
an `Embedding` -> 2-layer `LSTM` (`time_major=True`, as the original's
`[seq, batch]` batches) -> decoder tied to the embedding weight
(`matmul(..., transpose_y=True)`), `get_batch` slicing `bptt` rows of a
batchified corpus (the last batch is shorter), `repackage_hidden` detaching
the state between batches, SGD with `ClipGradByGlobalNorm`, and an
evaluation pass under `no_grad` summing `len(data) * loss`. Run eagerly,
with `forward` converted, and with the whole train step converted (the
hidden state in and out of the program); losses, the evaluation and the
parameters agree on numpy and xla; the converted model saves and loads."""
import numpy as np
import pytest

import d2s as paddle
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, t

NTOKEN, NINP, NLAYERS, BPTT = 11, 6, 2, 4


class RNNModel(nn.Layer):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.0)
        self.encoder = nn.Embedding(NTOKEN, NINP)
        self.rnn = nn.LSTM(NINP, NINP, NLAYERS, time_major=True)
        self.bias = self.create_parameter([NTOKEN], is_bias=True)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = paddle.matmul(output, self.encoder.weight, transpose_y=True) + self.bias
        return F.log_softmax(decoded.reshape([-1, NTOKEN]), axis=1), hidden

    def init_hidden(self, bsz):
        return (paddle.zeros([NLAYERS, bsz, NINP]), paddle.zeros([NLAYERS, bsz, NINP]))


def repackage_hidden(h):
    if isinstance(h, paddle.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(BPTT, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape([-1])


def script(backend, how):
    paddle.seed(0)
    model = RNNModel()
    if how == "forward":
        model.forward = paddle.jit.to_static(model.forward, backend=backend)
    opt = paddle.optimizer.SGD(learning_rate=1.0, parameters=model.parameters(),
                               grad_clip=nn.ClipGradByGlobalNorm(0.25))

    def train_step(x, y, hidden):
        output, hidden = model(x, hidden)
        loss = F.nll_loss(output, y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss, hidden

    if how == "step":
        train_step = paddle.jit.to_static(train_step, backend=backend)
    corpus = t(np.random.RandomState(1).randint(0, NTOKEN, (12, 2)))   # batches of 4, 4, 3
    record = []
    for epoch in range(2):
        model.train()
        hidden = model.init_hidden(2)
        for i in range(0, corpus.shape[0] - 1, BPTT):
            x, y = get_batch(corpus, i)
            hidden = repackage_hidden(hidden)
            loss, hidden = train_step(x, y, hidden)
            record.append(loss.numpy())
        model.eval()
        total = 0.0
        with paddle.no_grad():
            hidden = model.init_hidden(2)
            for i in range(0, corpus.shape[0] - 1, BPTT):
                x, y = get_batch(corpus, i)
                output, hidden = model(x, hidden)
                hidden = repackage_hidden(hidden)
                total += len(x) * F.nll_loss(output, y).item()
        record.append(total / (len(corpus) - 1))
    return record + [p.numpy() for p in model.parameters()], model


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", ["forward", "step"])
def test_word_language_model_script_matches_eager(backend, how):
    expected, _ = script(backend, "eager")
    actual, _ = script(backend, how)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6, err_msg=f"record {i}")


def test_word_language_model_save_load(tmp_path):
    _, model = script("numpy", "eager")
    model.eval()
    spec = [InputSpec([None, None], "int64"),
            (InputSpec([NLAYERS, None, NINP], "float32"),
             InputSpec([NLAYERS, None, NINP], "float32"))]
    x, hidden = t(np.random.RandomState(2).randint(0, NTOKEN, (5, 3))), model.init_hidden(3)
    expected = model(x, hidden)
    path = str(tmp_path / "lm")
    paddle.jit.save(model, path, input_spec=spec)
    loaded = paddle.jit.load(path)
    out, (h, c) = loaded(x, hidden)             # the nesting the spec had
    np.testing.assert_allclose(out.numpy(), expected[0].numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h.numpy(), expected[1][0].numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(c.numpy(), expected[1][1].numpy(), rtol=1e-6, atol=1e-7)
    flat = loaded(x, *hidden)                   # or the program's own flat inputs
    np.testing.assert_array_equal(flat[0].numpy(), out.numpy())
    with pytest.raises(TypeError, match="takes 3 inputs"):
        loaded(x, hidden[0])
