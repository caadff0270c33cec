"""ResNet-style basic blocks (conv-BN-ReLU-conv-BN plus an identity or a
1x1 projection shortcut, then global average pooling), the torchvision /
paddle.vision layout shrunk to a few channels."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, save_load_infer, t, train_and_compare
from xla_budget import for_backend


class BasicBlock(nn.Layer):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2D(cin, cout, 3, stride=stride, padding=1, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(cout)
        self.conv2 = nn.Conv2D(cout, cout, 3, padding=1, bias_attr=False)
        self.bn2 = nn.BatchNorm2D(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2D(cin, cout, 1, stride=stride,
                                                      bias_attr=False), nn.BatchNorm2D(cout))

    def forward(self, x):
        identity = x
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return F.relu(out + identity)


class TinyResNet(nn.Layer):
    def __init__(self, classes=4):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2D(3, 4, 3, padding=1, bias_attr=False),
                                  nn.BatchNorm2D(4), nn.ReLU())
        self.layer1 = nn.Sequential(BasicBlock(4, 4), BasicBlock(4, 8, stride=2))
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        x = self.layer1(self.stem(x))
        x = d2s.flatten(self.pool(x), 1)
        return self.fc(x)


SPEC = [InputSpec([None, 3, 8, 8], "float32")]
RNG = np.random.default_rng(3)
BATCHES = [(RNG.normal(size=(n, 3, 8, 8)), RNG.integers(0, 4, n)) for n in (4, 3, 4)]


def xent(logits, x, y):
    return F.cross_entropy(logits, y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_resnet_trains_and_evaluates_like_eager(backend):
    eager, model, fwd = train_and_compare(TinyResNet, BATCHES, backend, SPEC, loss=xent,
                                          opt="sgd", lr=0.05)
    eager.eval()
    model.eval()
    x = t(RNG.normal(size=(2, 3, 8, 8)))
    close(fwd(x).numpy(), eager(x).numpy(), backend, "eval output")


def test_resnet_save_load_infer(tmp_path):
    model, _, _ = train_and_compare(TinyResNet, BATCHES[:1], "numpy", SPEC, loss=xent)
    save_load_infer(model, SPEC, [t(RNG.normal(size=(2, 3, 8, 8)))], tmp_path)


@pytest.mark.parametrize("backend", BACKENDS)
def test_resnet_trains_on_any_image_size(backend):
    """Stride-2 convs over H/W unknown when built: an 8-row input leaves a row
    no window reads (its gradient is 0), a 7-row one none; one program."""
    batches = [(RNG.normal(size=(2, 3, s, s)), RNG.integers(0, 4, 2)) for s in (8, 7, 8)]
    _, _, fwd = train_and_compare(TinyResNet, for_backend(batches, backend), backend,
                                  [InputSpec([None, 3, None, None])], loss=xent, opt="sgd",
                                  lr=0.05)
    assert len(fwd.program_cache) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_conv_bn_net_trains_on_any_image_size(backend):
    """Stride-1 convs and pools only: H and W may be None."""
    from test_cnn_batchnorm import ConvBNNet
    batches = [(RNG.normal(size=(2, 1, 8, 8)), RNG.integers(0, 3, 2)) for _ in range(2)]
    train_and_compare(ConvBNNet, batches, backend, [InputSpec([None, 1, None, None])],
                      loss=xent, opt="sgd", lr=0.05)
