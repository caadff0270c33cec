"""A small CNN with BatchNorm, trained then evaluated (PaddlePaddle vision
style: Conv2D -> BatchNorm2D -> ReLU -> MaxPool2D, then a classifier head)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, save_load_infer, t, train_and_compare


class ConvBNNet(nn.Layer):
    def __init__(self, num_classes=3):
        super().__init__()
        self.conv1 = nn.Conv2D(1, 4, 3, padding=1, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(4)
        self.conv2 = nn.Conv2D(4, 6, 3, padding=1, bias_attr=False)
        self.bn2 = nn.BatchNorm2D(6)
        self.pool = nn.MaxPool2D(2, 2)
        self.fc = nn.Linear(6 * 2 * 2, num_classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        x = d2s.flatten(x, start_axis=1)
        return self.fc(x)


SPEC = [InputSpec([None, 1, 8, 8], "float32")]
RNG = np.random.default_rng(1)
BATCHES = [(RNG.normal(size=(n, 1, 8, 8)), RNG.integers(0, 3, n)) for n in (4, 6, 4)]


def xent(logits, x, y):
    return F.cross_entropy(logits, y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cnn_batchnorm_trains_then_evaluates_like_eager(backend):
    eager, model, fwd = train_and_compare(ConvBNNet, BATCHES, backend, SPEC, loss=xent,
                                          opt="adam")
    eager.eval()
    model.eval()
    x = t(RNG.normal(size=(5, 1, 8, 8)))
    close(fwd(x).numpy(), eager(x).numpy(), backend, "eval output")
    # the running statistics moved (they were written back by the program)
    assert not np.allclose(model.bn1._mean.numpy(), 0.0)
    model.train()
    eager.train()
    close(fwd(x).numpy(), eager(x).numpy(), backend, "train output after eval")


def test_cnn_batchnorm_save_load_infer(tmp_path):
    model, _, _ = train_and_compare(ConvBNNet, BATCHES[:1], "numpy", SPEC, loss=xent)
    save_load_infer(model, SPEC, [t(RNG.normal(size=(3, 1, 8, 8)))], tmp_path)
