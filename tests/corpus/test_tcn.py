"""A temporal convolutional network (the TCN of Bai et al. as ported to
PaddlePaddle / PyTorch): residual blocks of dilated `Conv1D` made causal by
left-padding with `F.pad` and chopping nothing off the right, weight-norm-free,
a 1x1 downsample on the residual where channels change; a sequence
regression head on the last time step. Variable batch and length."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, save_load_infer, t, train_and_compare
from xla_budget import for_backend


class TemporalBlock(nn.Layer):
    def __init__(self, cin, cout, kernel, dilation):
        super().__init__()
        self.pad = (kernel - 1) * dilation
        self.conv1 = nn.Conv1D(cin, cout, kernel, dilation=dilation)
        self.conv2 = nn.Conv1D(cout, cout, kernel, dilation=dilation)
        self.downsample = nn.Conv1D(cin, cout, 1) if cin != cout else None

    def causal(self, conv, x):
        return conv(F.pad(x, [self.pad, 0], data_format="NCL"))

    def forward(self, x):
        out = F.relu(self.causal(self.conv1, x))
        out = F.relu(self.causal(self.conv2, out))
        res = x if self.downsample is None else self.downsample(x)
        return F.relu(out + res)


class TCN(nn.Layer):
    def __init__(self, cin=2, channels=(4, 4, 6), kernel=2):
        super().__init__()
        layers = []
        for i, cout in enumerate(channels):
            layers.append(TemporalBlock(cin if i == 0 else channels[i - 1], cout, kernel, 2 ** i))
        self.network = nn.Sequential(*layers)
        self.linear = nn.Linear(channels[-1], 1)

    def forward(self, x):                       # x: [B, L, C] like an RNN input
        y = self.network(x.transpose([0, 2, 1]))
        return self.linear(y[:, :, -1])


SPEC = [InputSpec([None, None, 2], "float32")]
RNG = np.random.default_rng(13)
BATCHES = [(RNG.normal(size=(n, l, 2)), RNG.normal(size=(n, 1))) for n, l in ((3, 7), (2, 5), (3, 7))]


def mse(pred, x, y):
    return F.mse_loss(pred, y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tcn_trains_like_eager(backend):
    eager, model, fwd = train_and_compare(TCN, for_backend(BATCHES, backend), backend, SPEC, loss=mse, opt="sgd", lr=0.05)
    assert len(fwd.program_cache) == 1


def test_tcn_is_causal_after_conversion():
    """Changing a future step leaves earlier outputs alone (checked on the
    converted network's per-step features)."""
    model = TCN()
    feats = d2s.jit.to_static(lambda x: model.network(x.transpose([0, 2, 1])))
    x = RNG.normal(size=(1, 6, 2)).astype("float32")
    x2 = x.copy()
    x2[:, 4:] += 1.0
    a, b = feats(t(x)).numpy(), feats(t(x2)).numpy()
    np.testing.assert_array_equal(a[:, :, :4], b[:, :, :4])
    assert not np.allclose(a[:, :, 4:], b[:, :, 4:])


def test_tcn_save_load_infer(tmp_path):
    model = TCN()
    save_load_infer(model, SPEC, [t(RNG.normal(size=(2, 9, 2)))], tmp_path)
