"""d2s.summary: parameter totals (trainable and frozen, shared weights once),
each layer's output shape in the printed table, several inputs, the
network's mode kept; a missing input_size is a clear error."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 4, 3, padding=1)
        self.body = nn.Sequential(nn.ReLU(), nn.Flatten(), nn.Linear(4 * 5 * 5, 6))
        self.head = nn.Linear(6, 2)
        self.head.bias.stop_gradient = True

    def forward(self, x):
        return self.head(self.body(self.conv(x)))


def test_totals_and_table(capsys):
    net = Net()
    net.train()
    info = d2s.summary(net, (-1, 3, 5, 5))
    total = sum(int(np.prod(p.shape)) for p in net.parameters())
    assert info == {"total_params": total, "trainable_params": total - 2}
    out = capsys.readouterr().out
    assert "Conv2D-1" in out and "[1, 4, 5, 5]" in out and "[1, 100]" in out
    assert "[1, 2]" in out and f"Total params: {total:,}" in out
    assert net.training


def test_several_inputs_and_shared_weights(capsys):
    class Two(nn.Layer):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = self.a  # the same layer twice: its parameters counted once

        def forward(self, x, y):
            return self.b(self.a(x)) + y
    info = d2s.summary(Two(), input=[d2s.ones([2, 3]), d2s.ones([2, 3])])
    assert info["total_params"] == 12
    assert "[2, 3]" in capsys.readouterr().out
    assert d2s.summary(Two(), [(1, 3), (1, 3)])["trainable_params"] == 12
    with pytest.raises(ValueError, match="input_size"):
        d2s.summary(Two())
