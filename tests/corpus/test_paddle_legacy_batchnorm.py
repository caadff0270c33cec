"""`nn.BatchNorm` with PaddlePaddle's dygraph signature, as the MobileNet,
SE-ResNet, TSM and DarkNet code of PaddlePaddle's dygraph-to-static tests
builds it: `BatchNorm(c, act="relu", param_attr=ParamAttr(name=...),
bias_attr=..., moving_mean_name=..., data_layout=...)`. A conv + BatchNorm
stack trains for several steps, converted, as eagerly (numpy and xla, batch
dim unknown), then evaluates on the running statistics."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import ParamAttr
from d2s.static import InputSpec

from harness import BACKENDS, close, t, train_and_compare


class ConvBNLayer(nn.Layer):
    def __init__(self, cin, cout, k, stride=1, groups=1, act="relu", name=None):
        super().__init__()
        self._conv = nn.Conv2D(cin, cout, k, stride=stride, padding=(k - 1) // 2,
                               groups=groups, bias_attr=False)
        self._bn = nn.BatchNorm(cout, act=act,
                                param_attr=ParamAttr(name=f"{name}_bn_scale"),
                                bias_attr=ParamAttr(name=f"{name}_bn_offset"),
                                moving_mean_name=f"{name}_bn_mean",
                                moving_variance_name=f"{name}_bn_variance")

    def forward(self, x):
        return self._bn(self._conv(x))


class DepthwiseNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stem = ConvBNLayer(3, 4, 3, stride=2, name="stem")
        self.dw = ConvBNLayer(4, 4, 3, groups=4, act="leaky_relu", name="dw")
        self.pw = ConvBNLayer(4, 6, 1, act=None, name="pw")
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        y = self.pw(self.dw(self.stem(x)))
        return self.fc(d2s.flatten(self.pool(y), start_axis=1))


SPEC = [InputSpec([None, 3, 6, 6])]


@pytest.mark.parametrize("backend", BACKENDS)
def test_legacy_batchnorm_trains_and_evaluates_as_eagerly(backend):
    rng = np.random.default_rng(0)
    batches = [(rng.normal(1.0, 2.0, (n, 3, 6, 6)), rng.integers(0, 3, (n,))) for n in (2, 3, 2)]

    def after(eager, model):
        eager.eval()
        model.eval()
        static = d2s.jit.to_static(model.forward, input_spec=SPEC, backend=backend)
        x = t(rng.normal(size=(2, 3, 6, 6)))
        close(static(x).numpy(), eager(x).numpy(), backend, "eval output")
        assert not np.allclose(model.stem._bn._mean.numpy(), 0.0)   # the statistics moved

    train_and_compare(DepthwiseNet, batches, backend, input_spec=SPEC, opt="sgd",
                      loss=lambda out, x, y: F.cross_entropy(out, y), after=after)


def test_act_and_layout_keywords():
    x = np.random.default_rng(1).normal(size=(2, 3, 2, 2)).astype("float32")
    mean, var = x.mean(axis=(0, 2, 3), keepdims=True), x.var(axis=(0, 2, 3), keepdims=True)
    ref = (x - mean) / np.sqrt(var + 1e-5)
    for act, fn in [("relu", lambda v: np.maximum(v, 0)),
                    ("leaky_relu", lambda v: np.where(v > 0, v, 0.02 * v)),   # the op's slope
                    (None, lambda v: v)]:
        out = nn.BatchNorm(3, act=act)(d2s.to_tensor(x)).numpy()
        np.testing.assert_allclose(out, fn(ref), rtol=1e-5, atol=1e-5)
    nhwc = nn.BatchNorm(3, data_layout="NHWC")(d2s.to_tensor(x.transpose(0, 2, 3, 1)))
    np.testing.assert_allclose(nhwc.numpy(), ref.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="unknown act 'bogus'"):
        nn.BatchNorm(3, act="bogus")
