"""RevIN as time-series libraries write it: the "norm" call stores the
series' statistics on the layer (`self.mean = ...`, `self.stdev = ...`) and
the "denorm" call of the same forward reads them back. Converted, the
statistics are written back after each run (DESIGN §4); trained, then put in
eval mode and saved, the loaded program computes them per call, as every
eager call does (no call reads what an earlier one stored). A forward that
does read the previous call's value still cannot be saved, with an error
naming it."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.static import InputSpec

from harness import BACKENDS, close, t, train_and_compare

L, H, C = 8, 4, 3


class RevIN(nn.Layer):
    def __init__(self, channels, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.affine_weight = self.create_parameter(
            [channels], default_initializer=nn.initializer.Constant(1.0))
        self.affine_bias = self.create_parameter(
            [channels], default_initializer=nn.initializer.Constant(0.0))

    def forward(self, x, mode):
        if mode == "norm":
            self.mean = x.mean(axis=1, keepdim=True).detach()
            self.stdev = d2s.sqrt(x.var(axis=1, keepdim=True, unbiased=False) + self.eps).detach()
            x = (x - self.mean) / self.stdev
            return x * self.affine_weight + self.affine_bias
        x = (x - self.affine_bias) / (self.affine_weight + self.eps * self.eps)
        return x * self.stdev + self.mean


class Forecaster(nn.Layer):
    def __init__(self):
        super().__init__()
        self.revin = RevIN(C)
        self.head = nn.Linear(L, H)

    def forward(self, x):                                          # [B, L, C]
        x = self.revin(x, "norm")
        y = self.head(x.transpose([0, 2, 1])).transpose([0, 2, 1])
        return self.revin(y, "denorm")


def mse(pred, x, y):
    return ((pred - y) ** 2).mean()


RNG = np.random.default_rng(17)
SPEC = [InputSpec([None, L, C])]


def batch(n):
    return (RNG.normal(size=(n, L, C)) * 3 + 2, RNG.normal(size=(n, H, C)) * 3 + 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_revin_forecaster_trains_like_eager_and_keeps_its_statistics(backend):
    def statistics(eager, model):
        close(model.revin.mean.numpy(), eager.revin.mean.numpy(), backend, "revin.mean")
        close(model.revin.stdev.numpy(), eager.revin.stdev.numpy(), backend, "revin.stdev")
    # (SGD: the affine weight's gradient nearly cancels, and Adam would blow the
    # xla rounding of that small gradient up to whole steps)
    train_and_compare(Forecaster, [batch(2), batch(3), batch(2)], backend, SPEC, loss=mse,
                      opt="sgd", after=statistics)


def test_trained_revin_forecaster_saves_loads_and_forecasts(tmp_path):
    _, model, _ = train_and_compare(Forecaster, [batch(2), batch(2)], "numpy", SPEC, loss=mse)
    model.eval()
    d2s.jit.save(model, str(tmp_path / "revin"), input_spec=SPEC)
    loaded = d2s.jit.load(str(tmp_path / "revin"))
    for n in (1, 4):
        x = t(batch(n)[0])
        out = loaded(x)
        assert isinstance(out, d2s.Tensor)
        np.testing.assert_array_equal(out.numpy(), model(x).numpy())


class Differencer(nn.Layer):
    """Reads what the previous call stored: its output depends on the call
    history, which a saved program cannot keep."""

    def __init__(self):
        super().__init__()
        self.scale = self.create_parameter([1])
        self.last = d2s.zeros([1, L, C])

    def forward(self, x):
        out = (x - self.last) * self.scale
        self.last = x[:1]
        return out


def test_a_forward_reading_the_previous_calls_state_is_not_saved(tmp_path):
    model = Differencer()
    model(t(np.ones((1, L, C))))
    model.eval()
    with pytest.raises(TypeError, match=r"self\.last.*keeps no state between calls"):
        d2s.jit.save(model, str(tmp_path / "d"), input_spec=[InputSpec([1, L, C])])


def test_a_fresh_revin_forecaster_loaded_from_a_checkpoint_saves(tmp_path):
    """The export script's flow: a new model, its weights set, eval, save
    (the statistics were never stored on it)."""
    _, trained, _ = train_and_compare(Forecaster, [batch(2)], "numpy", SPEC, loss=mse)
    model = Forecaster()
    model.set_state_dict(trained.state_dict())
    model.eval()
    d2s.jit.save(model, str(tmp_path / "revin"), input_spec=SPEC)
    loaded = d2s.jit.load(str(tmp_path / "revin"))
    x = t(batch(3)[0])
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())


class LazyCounter(nn.Layer):
    """Tests its state's absence and counts calls: each call's output depends
    on the earlier calls."""

    def __init__(self):
        super().__init__()
        self.scale = self.create_parameter([1])

    def forward(self, x):
        count = self.count if hasattr(self, "count") else d2s.zeros([1])
        self.count = count + 1
        return x * self.scale * self.count


def test_a_counter_kept_on_the_layer_is_not_saved(tmp_path):
    model = LazyCounter()
    model.eval()
    with pytest.raises(TypeError, match=r"self\.count"):
        d2s.jit.save(model, str(tmp_path / "c"), input_spec=[InputSpec([None, 2])])
