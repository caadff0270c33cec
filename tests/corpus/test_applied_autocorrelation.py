"""Autoformer's auto-correlation attention as time-series code ports it:
period correlations by rfft / irfft, the top-k delays of the batch-mean
correlation, and the values rolled by each delay (`d2s.roll(v,
-int(index[i]), -1)`: a shift computed in the program), weighted by a
softmax over the delays' correlations."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from d2s import optimizer

from harness import BACKENDS, close, grads, t, twins

L, D = 8, 4


class AutoCorrelationLayer(nn.Layer):
    def __init__(self, factor=1):
        super().__init__()
        self.factor = factor
        self.q, self.k, self.v = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)
        self.out = nn.Linear(D, 1)

    def aggregate(self, values, corr):                           # [B, D, L] each
        length = values.shape[-1]
        top_k = int(self.factor * np.log(length))
        mean_value = corr.mean(axis=1)                             # [B, L]
        index = d2s.topk(mean_value.mean(axis=0), top_k, axis=-1)[1]
        weights = d2s.stack([mean_value[:, index[i]] for i in range(top_k)], axis=-1)
        weights = F.softmax(weights, axis=-1)
        agg = d2s.zeros_like(values)
        for i in range(top_k):
            pattern = d2s.roll(values, -int(index[i]), -1)
            agg = agg + pattern * weights[:, i].reshape([-1, 1, 1])
        return agg

    def forward(self, x, y):                                       # [B, L, D]
        q, k, v = [p(x).transpose([0, 2, 1]) for p in (self.q, self.k, self.v)]
        corr = d2s.fft.irfft(d2s.fft.rfft(q, axis=-1) * d2s.conj(d2s.fft.rfft(k, axis=-1)),
                             n=L, axis=-1)
        out = self.aggregate(v, corr).transpose([0, 2, 1])
        return F.mse_loss(self.out(out).squeeze(-1), y)


RNG = np.random.default_rng(41)


@pytest.mark.parametrize("backend", BACKENDS)
def test_auto_correlation_trains_like_eager(backend):
    """Compared to float32 rounding (the fft gradients round differently in
    the program), with SGD: Adam would turn the rounding noise of q.bias's
    zero gradient (a constant shift of q moves every lag alike) into whole
    steps."""
    eager, model = twins(AutoCorrelationLayer)
    fn = d2s.jit.to_static(model, input_spec=[InputSpec([None, L, D]), InputSpec([None, L])],
                           backend=backend)
    opts = [optimizer.SGD(learning_rate=0.1, parameters=m.parameters()) for m in (eager, model)]
    for step in range(3):
        x, y = t(RNG.normal(size=(2, L, D))), t(RNG.normal(size=(2, L)))
        for f, opt in zip((eager, fn), opts):
            f(x, y).backward()
            opt.step()
        ge, gs = grads(eager), grads(model)
        for k in ge:
            np.testing.assert_allclose(gs[k], ge[k], rtol=1e-4, atol=1e-6, err_msg=f"{step} {k}")
        for opt in opts:
            opt.clear_grad()
    for (k, a), b in zip(eager.state_dict().items(), model.state_dict().values()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shift", [2, -3, 11, 0])
@pytest.mark.parametrize("axis,dims", [(-1, [None, 5]), (0, [None, 3]), (None, [2, None])])
def test_roll_by_a_shift_computed_in_the_program_matches_numpy(backend, shift, axis, dims):
    fn = d2s.jit.to_static(lambda x, s: d2s.roll(x, s.sum(), axis),
                           input_spec=[InputSpec(dims), InputSpec([1], "int64")], backend=backend)
    x = RNG.normal(size=(4, 5) if dims[-1] in (None, 5) and dims[0] is None else (2, 3))
    x = x.astype("float32")
    out = fn(t(x), t(np.array([shift])))
    close(out.numpy(), np.roll(x, shift, axis), backend, "rolled")
    if dims[0] is None and dims[1] is not None:
        assert fn.concrete_program.outputs[0].shape[1] == dims[1]   # the size stays known
