"""An LSTM language model whose hidden state is carried from one batch to
the next (truncated BPTT, as in the PTB word-language-model examples): the
state is detached between batches, and the model can also keep it itself
as an attribute written in `forward`."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, grads, make_optimizer, state, t, twins

V, E, H, L = 16, 6, 8, 2


class LSTMLM(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, E)
        self.rnn = nn.LSTM(E, H, num_layers=L)
        self.out = nn.Linear(H, V)

    def forward(self, ids, h0, c0):
        out, (h, c) = self.rnn(self.embed(ids), (h0, c0))
        return self.out(out), h, c


class StatefulLSTMLM(LSTMLM):
    """Keeps its state across calls: `self.hidden` is written in forward."""

    def __init__(self):
        super().__init__()
        self.hidden = None

    def forward(self, ids):
        if self.hidden is None:
            b = ids.shape[0]
            self.hidden = (d2s.zeros([L, b, H]), d2s.zeros([L, b, H]))
        out, (h, c) = self.rnn(self.embed(ids), self.hidden)
        self.hidden = (h.detach(), c.detach())
        return self.out(out)


# PTB-style truncated BPTT: a fixed number of steps per chunk
SPEC = [InputSpec([2, 4], "int64"), InputSpec([L, 2, H], "float32"),
        InputSpec([L, 2, H], "float32")]
RNG = np.random.default_rng(5)
STREAM = RNG.integers(0, V, (2, 13))
CHUNKS = [(STREAM[:, i:i + 4], STREAM[:, i + 1:i + 5]) for i in (0, 4, 8)]


def lm_loss(logits, y):
    return F.cross_entropy(d2s.reshape(logits, [-1, V]), d2s.reshape(y, [-1]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_lstm_lm_carries_detached_state_between_batches(backend):
    eager, model = twins(LSTMLM)
    fwd = d2s.jit.to_static(model.forward, input_spec=SPEC, backend=backend)
    run = {False: eager, True: fwd}
    opts = {False: make_optimizer("sgd", eager, 0.5), True: make_optimizer("sgd", model, 0.5)}
    hidden = {s: (d2s.zeros([L, 2, H]), d2s.zeros([L, 2, H])) for s in (False, True)}
    for step, (x, y) in enumerate(CHUNKS):
        got = {}
        for s in (False, True):
            logits, h, c = run[s](t(x), *hidden[s])
            loss = lm_loss(logits, t(y))
            loss.backward()
            got[s] = (loss.numpy(), grads(model if s else eager), h.numpy())
            opts[s].step()
            opts[s].clear_grad()
            hidden[s] = (h.detach(), c.detach())
        close(got[True][0], got[False][0], backend, f"step {step} loss")
        close(got[True][2], got[False][2], backend, f"step {step} hidden")
        for k, g in got[False][1].items():
            close(got[True][1][k], g, backend, f"step {step} grad {k}")
    for k, v in state(eager).items():
        close(state(model)[k], v, backend, k)
    assert len(fwd.program_cache) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_lstm_lm_keeps_its_own_state_attribute(backend):
    eager, model = twins(StatefulLSTMLM)
    fwd = d2s.jit.to_static(model.forward, input_spec=[InputSpec([2, 4], "int64")],
                            backend=backend)
    eager.hidden = (d2s.zeros([L, 2, H]), d2s.zeros([L, 2, H]))
    model.hidden = (d2s.zeros([L, 2, H]), d2s.zeros([L, 2, H]))
    for step, (x, y) in enumerate(CHUNKS):
        a = lm_loss(eager(t(x)), t(y))
        b = lm_loss(fwd(t(x)), t(y))
        close(b.numpy(), a.numpy(), backend, f"step {step} loss")
        assert isinstance(model.hidden[0], d2s.Tensor)
        close(model.hidden[0].numpy(), eager.hidden[0].numpy(), backend, f"step {step} h")
        close(model.hidden[1].numpy(), eager.hidden[1].numpy(), backend, f"step {step} c")


def test_lstm_lm_with_unknown_chunk_length():
    """A None time dim: the LSTM's steps are one `while` op of the program,
    built once for every chunk length."""
    eager, model = twins(LSTMLM)
    spec = [InputSpec([2, None], "int64")] + SPEC[1:]
    fwd = d2s.jit.to_static(model.forward, input_spec=spec)
    h0 = d2s.zeros([L, 2, H])
    for x, _ in CHUNKS:
        close(fwd(t(x), h0, h0)[0].numpy(), eager(t(x), h0, h0)[0].numpy(), "numpy", "logits")
    ops = {op.type for op in fwd.get_concrete_program(t(CHUNKS[0][0]), h0, h0)
           .main_program.all_ops()}
    assert "while" in ops
