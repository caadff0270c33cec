"""Training windows cut inside `forward` from a series of any length (the
PaddleTS / PyTorch forecasting shape: `series.unfold(1, lookback + horizon,
1)`, then inputs and targets sliced from each window): with a `None` length
in the InputSpec the number of windows is known only at run time."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, t, train_and_compare

LOOKBACK, HORIZON = 4, 2


class WindowedForecaster(nn.Layer):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(LOOKBACK, HORIZON)

    def forward(self, series):                                  # [B, T]
        windows = series.unfold(1, LOOKBACK + HORIZON, 1)       # [B, T - 5, 6]
        past, future = windows[..., :LOOKBACK], windows[..., LOOKBACK:]
        return F.mse_loss(self.head(past), future)


RNG = np.random.default_rng(11)


@pytest.mark.parametrize("backend", BACKENDS)
def test_forecaster_on_windows_of_a_series_of_any_length_trains_like_eager(backend):
    batches = [(RNG.normal(size=(2, n)),) for n in (9, 7, 12)]
    train_and_compare(WindowedForecaster, batches, backend, [InputSpec([None, None])], opt="adam")


def numpy_unfold(x, axis, size, step):
    n = x.shape[axis]
    wins = [np.take(x, range(s, s + size), axis=axis) for s in range(0, n - size + 1, step)]
    return np.moveaxis(np.stack(wins, axis=axis), axis + 1, -1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,axis,size,step", [((2, 9), 1, 3, 2), ((7, 2), 0, 3, 1),
                                                  ((2, 8, 3), 1, 8, 5), ((1, 5), -1, 1, 3)])
def test_unfold_of_an_axis_known_at_run_time_matches_numpy(backend, shape, axis, size, step):
    spec = [InputSpec([None] * len(shape))]
    fn = d2s.jit.to_static(lambda x: x.unfold(axis, size, step), input_spec=spec, backend=backend)
    x = RNG.normal(size=shape).astype("float32")
    close(fn(t(x)).numpy(), numpy_unfold(x, axis % len(shape), size, step), backend, "windows")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_window_longer_than_the_series_fails_at_run_time(backend):
    fn = d2s.jit.to_static(lambda x: x.unfold(1, 6, 1), input_spec=[InputSpec([None, None])],
                           backend=backend)
    assert fn(t(np.zeros((1, 6)))).shape[1] == 1
    with pytest.raises(AssertionError, match="size=6 is larger than the size of axis 1"):
        fn(t(np.zeros((1, 5))))
