"""`assert` and `raise` with an f-string message of tensor values, as
positional encodings and CRF layers check their inputs (`assert T <=
self.max_len, f"sequence length {T} exceeds {self.max_len}"` with `T =
x.shape[1]` a `None` dim; `if ...: raise ValueError(f"...")`): the converted
check fails when eager code does, with eager's message formatted from that
run's values (it showed the traced Variable)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.static import InputSpec

from harness import BACKENDS, t, twins


class PositionalEncoding(nn.Layer):
    def __init__(self, d=4, max_len=6):
        super().__init__()
        self.max_len = max_len
        table = np.random.default_rng(0).normal(size=(1, max_len, d)).astype("float32")
        self.register_buffer("pe", d2s.to_tensor(table))

    def forward(self, x):
        length = x.shape[1]
        assert length <= self.max_len, f"sequence length {length} exceeds {self.max_len}"
        return x + self.pe[:, :length]


class RaisingEncoding(PositionalEncoding):
    def forward(self, x):
        if x.shape[1] > self.max_len:
            raise ValueError(f"input length {x.shape[1]} exceeds max_len={self.max_len}")
        return x + self.pe[:, :x.shape[1]]


def check_lengths(emissions, lengths):
    assert (lengths <= emissions.shape[1]).all(), \
        "lengths must not exceed the steps: got max %d for %d steps" % (
            lengths.max().item(), emissions.shape[1])
    assert lengths.min() > 0, "an empty sequence (length {})".format(lengths.min().item())
    return emissions.sum(-1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_assert_message_shows_the_run_time_length(backend):
    eager, model = twins(PositionalEncoding)
    fn = d2s.jit.to_static(model, input_spec=[InputSpec([None, None, 4])], backend=backend)
    x = t(np.ones((2, 5, 4)))
    np.testing.assert_array_equal(fn(x).numpy(), eager(x).numpy())
    too_long = t(np.ones((2, 7, 4)))
    with pytest.raises(AssertionError) as expected:
        eager(too_long)
    with pytest.raises(AssertionError) as got:
        fn(too_long)
    # (pytest's assert rewriting adds its explanation to eager's message)
    assert str(expected.value).splitlines()[0] == "sequence length 7 exceeds 6"
    assert str(got.value).startswith("sequence length 7 exceeds 6")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lengths,message", [
    ([3, 5], "lengths must not exceed the steps: got max 5 for 4 steps"),
    ([3, 0], "an empty sequence (length 0)")])
def test_percent_and_format_messages_are_formatted_at_run_time(backend, lengths, message):
    fn = d2s.jit.to_static(check_lengths, input_spec=[InputSpec([None, None, 2]),
                                                      InputSpec([None], "int64")],
                           backend=backend)
    em = t(np.zeros((2, 4, 2)))
    assert fn(em, t(np.array([4, 1]))).shape == (2, 4)
    with pytest.raises(AssertionError) as expected:
        check_lengths(em, t(np.array(lengths)))
    with pytest.raises(AssertionError) as got:
        fn(em, t(np.array(lengths)))
    assert str(expected.value).splitlines()[0] == message
    assert str(got.value).startswith(message)


@pytest.mark.parametrize("backend", BACKENDS)
def test_raise_message_shows_the_run_time_length(backend):
    eager, model = twins(RaisingEncoding)
    fn = d2s.jit.to_static(model, input_spec=[InputSpec([None, None, 4])], backend=backend)
    x = t(np.ones((2, 6, 4)))
    np.testing.assert_array_equal(fn(x).numpy(), eager(x).numpy())
    with pytest.raises(ValueError) as expected:
        eager(t(np.ones((1, 9, 4))))
    with pytest.raises(ValueError) as got:
        fn(t(np.ones((1, 9, 4))))
    assert str(expected.value) == "input length 9 exceeds max_len=6"
    assert str(got.value).startswith("input length 9 exceeds max_len=6")


def test_the_formatted_assert_survives_save_and_load(tmp_path):
    model = PositionalEncoding()
    model.eval()
    d2s.jit.save(model, str(tmp_path / "pe"), input_spec=[InputSpec([None, None, 4])])
    loaded = d2s.jit.load(str(tmp_path / "pe"))
    assert loaded(t(np.ones((1, 3, 4)))).shape == (1, 3, 4)
    with pytest.raises(AssertionError, match="sequence length 8 exceeds 6"):
        loaded(t(np.ones((1, 8, 4))))


def test_the_formatted_raise_survives_save_and_load(tmp_path):
    model = RaisingEncoding()
    model.eval()
    d2s.jit.save(model, str(tmp_path / "pe"), input_spec=[InputSpec([None, None, 4])])
    loaded = d2s.jit.load(str(tmp_path / "pe"))
    assert loaded(t(np.ones((1, 3, 4)))).shape == (1, 3, 4)
    with pytest.raises(ValueError, match="input length 8 exceeds max_len=6"):
        loaded(t(np.ones((1, 8, 4))))
