"""The time-sequence-prediction example script (sine waves, two stacked
`LSTMCell`s) ported to Paddle names: `forward` walks the time steps with
`for input_t in input.split(input.shape[1], axis=1)`, then predicts `future`
more steps from its own outputs, and concatenates the list of step outputs.
The whole script runs: training steps with Adam, `no_grad` prediction with
`future`, eagerly and with the model converted with a `[None, None]`
InputSpec (the time dim unknown: the split's pieces are counted when the
program runs and the converted `for` becomes a loop op), then jit.save /
jit.load. `unbind` over an unknown dim walks the same way; other uses of
such pieces fail with a message saying what to write."""
import numpy as np
import pytest

import d2s as paddle
import d2s.nn as nn
from d2s.static import InputSpec

from harness import BACKENDS, save_load_infer, t


class Sequence(nn.Layer):
    def __init__(self, hidden=6, unbind=False):
        super().__init__()
        self.hidden, self.unbind = hidden, unbind
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = paddle.zeros([input.shape[0], self.hidden], dtype="float32")
        c_t = paddle.zeros([input.shape[0], self.hidden], dtype="float32")
        h_t2 = paddle.zeros([input.shape[0], self.hidden], dtype="float32")
        c_t2 = paddle.zeros([input.shape[0], self.hidden], dtype="float32")
        pieces = input.unbind(1) if self.unbind else input.split(input.shape[1], axis=1)
        for input_t in pieces:
            if self.unbind:
                input_t = input_t.unsqueeze(1)
            _, (h_t, c_t) = self.lstm1(input_t, (h_t, c_t))
            _, (h_t2, c_t2) = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):
            _, (h_t, c_t) = self.lstm1(output, (h_t, c_t))
            _, (h_t2, c_t2) = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return paddle.concat(outputs, axis=1)


def sine_data(n=3, length=7):
    rng = np.random.RandomState(2)
    x = np.arange(length)[None, :] + rng.randint(-4, 4, n)[:, None]
    return np.sin(x / 2.0).astype("float32")


def script(backend, convert, unbind=False, steps=3, future=2):
    """The example's main: train, then predict `future` steps after each step."""
    paddle.seed(0)
    data = sine_data()
    inp, target = t(data[1:, :-1]), t(data[1:, 1:])
    test_inp, test_target = t(data[:1, :-1]), t(data[:1, 1:])
    seq = Sequence(unbind=unbind)
    if convert:
        seq = paddle.jit.to_static(seq, input_spec=[InputSpec([None, None], "float32")],
                                   backend=backend)
    criterion = nn.MSELoss()
    opt = paddle.optimizer.Adam(learning_rate=0.05, parameters=seq.parameters())
    record = []
    for _ in range(steps):
        opt.clear_grad()
        loss = criterion(seq(inp), target)
        loss.backward()
        opt.step()
        with paddle.no_grad():
            pred = seq(test_inp[:, :-1], future=future)   # a shorter input: same program
            record += [loss.numpy(), criterion(pred[:, :-future - 1], test_target[:, :-2]).numpy(),
                       pred.numpy()]
    return record + [p.numpy() for p in seq.parameters()], seq


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("unbind", [False, True], ids=["split", "unbind"])
def test_time_sequence_script_matches_eager(backend, unbind):
    expected, _ = script(backend, False, unbind)
    actual, seq = script(backend, True, unbind)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        # a loop op, not unrolled steps: float sums may round differently by an ulp
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6, err_msg=f"record {i}")
    assert actual[2].shape == (1, 7)  # 5 input steps + 2 future ones


def test_time_sequence_save_load_predicts(tmp_path):
    _, seq = script("numpy", True, steps=1)
    data = sine_data(length=9)
    save_load_infer(seq, [InputSpec([None, None], "float32")], [t(data)], tmp_path)


@pytest.mark.parametrize("use", ["len", "list", "unpack"])
def test_pieces_counted_at_run_time_need_a_loop(use):
    def f(x):
        pieces = x.split(x.shape[1], axis=1)
        if use == "len":
            return paddle.full([1], len(pieces))
        if use == "list":
            return paddle.concat(list(pieces), axis=1)
        a, b = pieces
        return a + b

    fn = paddle.jit.to_static(f, input_spec=[InputSpec([2, None], "float32")])
    with pytest.raises(TypeError, match=r"split: the number of pieces is the size of axis 1 "
                                        r".*known only when the program runs.*`for`.*InputSpec"):
        fn(t(np.ones((2, 2))))


def test_time_sequence_model_exports_to_onnx_for_any_length(tmp_path):
    """The loop over run-time-counted pieces is an ONNX `Loop`: ONNX Runtime
    gives the eager predictions at two lengths and batch sizes."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    paddle.seed(0)
    seq = Sequence()
    path = paddle.onnx.export(seq, str(tmp_path / "seq"),
                              input_spec=[InputSpec([None, None], "float32")])
    session = ort.InferenceSession(path)
    for n, length in ((2, 6), (3, 9)):
        x = sine_data(n, length)
        got = session.run(None, {session.get_inputs()[0].name: x})[0]
        np.testing.assert_allclose(got, seq(t(x)).numpy(), rtol=1e-5, atol=1e-6)
