"""d2s.flops: Paddle's documented LeNet example (347560 FLOPs, 61610
parameters, the per-layer numbers of its table), the batch-norm, pooling
and LeakyReLU rules, custom_ops, and the network's mode kept."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn


class LeNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1), nn.ReLU(), nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 5, stride=1, padding=0), nn.ReLU(), nn.MaxPool2D(2, 2))
        self.fc = nn.Sequential(nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10))

    def forward(self, x):
        return self.fc(d2s.flatten(self.features(x), 1))


def test_lenet_matches_paddles_documented_numbers(capsys):
    net = LeNet()
    assert d2s.flops(net, [1, 1, 28, 28], print_detail=True) == 347560
    out = capsys.readouterr().out
    assert "Total Flops: 347560     Total Params: 61610" in out
    for n in ("47040", "241600", "48000", "10080", "840"):
        assert n in out
    assert net.training


def test_other_rules_and_custom_ops(capsys):
    net = nn.Sequential(nn.Conv2D(2, 4, 3, groups=2, bias_attr=False), nn.BatchNorm2D(4),
                        nn.LeakyReLU(), nn.AvgPool2D(2), nn.AdaptiveAvgPool2D(1))
    # conv: 4*4*4 outputs x (2/2 * 9); bn: 2 x 64; leaky: 64; avgpool: 16; adaptive: (4+1) x 4
    want = 64 * 9 + 128 + 64 + 16 + 20
    assert d2s.flops(net, [1, 2, 6, 6]) == want

    def per_output(m, x, y):
        m.total_ops += 1000
    assert d2s.flops(net, [1, 2, 6, 6], custom_ops={nn.LeakyReLU: per_output}) == \
        want - 64 + 1000
    with pytest.raises(TypeError, match="Layer"):
        d2s.flops(object(), [1])
