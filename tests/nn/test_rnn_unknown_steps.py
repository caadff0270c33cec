"""LSTM / GRU / SimpleRNN converted with the time dim unknown in the
input_spec: the time loop is one `while` op, and outputs, final states and
parameter gradients equal eager's (numpy and xla backends), with and without
`sequence_length`, batch-major and time-major, one program for every length."""
import warnings

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static
from d2s.static import InputSpec

RNG = np.random.default_rng(17)

CASES = [
    (nn.LSTM, dict(num_layers=2, direction="bidirect"), True, False),
    (nn.GRU, dict(), False, False),
    (nn.GRU, dict(direction="bidirect"), True, True),
    (nn.SimpleRNN, dict(num_layers=2), True, False),
]


def _ops(program):
    names = set()
    for block in program.blocks:
        names.update(op.type for op in block.ops)
    return names


@pytest.mark.parametrize("cls,kwargs,with_lengths,time_major", CASES)
@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_unknown_time_dim_converted_equals_eager(cls, kwargs, with_lengths, time_major,
                                                 backend, monkeypatch):
    if backend == "xla":
        pytest.importorskip("jax")
        monkeypatch.setenv("D2S_XLA_SYNC", "1")
    d2s.seed(3)
    model = cls(3, 4, time_major=time_major, **kwargs)
    spec_x = InputSpec([None, None, 3], "float32")
    specs = [spec_x, None, InputSpec([None], "int64")] if with_lengths else [spec_x]
    from d2s.static.backend import BackendFallbackWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        converted = to_static(model.forward, input_spec=specs, backend=backend)
    lstm = cls is nn.LSTM

    def run(fn, x, lengths):
        for p in model.parameters():
            p.clear_grad()
        args = [d2s.to_tensor(x)]
        if with_lengths:
            args += [None, d2s.to_tensor(lengths)]
        out, final = fn(*args)
        finals = list(final) if lstm else [final]
        loss = (out * out).sum() + sum((f * (i + 2.0)).sum() for i, f in enumerate(finals))
        loss.backward()
        return [out.numpy()] + [f.numpy() for f in finals] + [
            p.grad.numpy() for p in model.parameters()]

    for steps in (5, 2):
        shape = (steps, 2, 3) if time_major else (2, steps, 3)
        x = RNG.standard_normal(shape).astype(np.float32)
        lengths = np.array([steps, max(steps - 2, 1)], np.int64)
        want = run(model, x, lengths)
        got = run(converted, x, lengths)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    programs = converted.program_cache
    assert len(programs) == 1  # one program serves every sequence length
    assert "while" in _ops(converted.concrete_program.main_program)


def test_unknown_time_dim_exports_to_onnx(tmp_path):
    """The time loop's while op becomes an ONNX Loop: one exported model runs
    every sequence length in ONNX Runtime."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    d2s.seed(1)

    class Encoder(nn.Layer):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(3, 4, direction="bidirect")

        def forward(self, x):
            return self.rnn(x)[0]
    enc = Encoder()
    enc.eval()
    path = d2s.onnx.export(enc, tmp_path / "gru.onnx",
                           input_spec=[InputSpec([None, None, 3], "float32")])
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for steps in (2, 5):
        x = RNG.standard_normal((2, steps, 3)).astype(np.float32)
        (got,) = sess.run(None, {sess.get_inputs()[0].name: x})
        np.testing.assert_allclose(got, enc(d2s.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
