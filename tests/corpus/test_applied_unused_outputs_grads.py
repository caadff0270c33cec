"""A multi-output model trained on a loss that uses only some outputs (a
feature pyramid whose training step reads one level, a multi-task net with a
head switched off): as eagerly, a parameter that feeds only the unused
outputs gets no gradient (None), so AdamW leaves it alone instead of
decaying it and moving it by a zero gradient's momentum."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, train_and_compare


class TinyPyramid(nn.Layer):
    def __init__(self):
        super().__init__()
        self.stages = nn.LayerList([nn.Conv2D(2, 3, 3, stride=2, padding=1),
                                    nn.Conv2D(3, 4, 3, stride=2, padding=1)])
        self.lateral = nn.LayerList([nn.Conv2D(c, 3, 1) for c in (3, 4)])
        self.smooth = nn.LayerList([nn.Conv2D(3, 3, 3, padding=1) for _ in range(2)])

    def forward(self, x):
        feats = []
        for stage in self.stages:
            x = F.relu(stage(x))
            feats.append(x)
        lat = [conv(f) for conv, f in zip(self.lateral, feats)]
        return [conv(f) for conv, f in zip(self.smooth, lat)]


class TwoHeads(nn.Layer):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(4, 6)
        self.cls = nn.Linear(6, 3)
        self.reg = nn.Linear(6, 1)

    def forward(self, x):
        h = F.relu(self.trunk(x))
        return self.cls(h), self.reg(h)


RNG = np.random.default_rng(3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pyramid_trained_on_the_finest_level_leaves_the_others_alone(backend):
    batches = [(RNG.normal(size=(1, 2, 8, 8)),) for _ in range(3)]
    train_and_compare(
        TinyPyramid, batches, backend, [InputSpec([None, 2, None, None])],
        loss=lambda outs, x: (outs[0] ** 2).mean(), opt="adamw")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_head_the_loss_does_not_read_gets_no_gradient(backend):
    batches = [(RNG.normal(size=(3, 4)),) for _ in range(3)]
    train_and_compare(
        TwoHeads, batches, backend, [InputSpec([None, 4])],
        loss=lambda outs, x: F.cross_entropy(outs[0], d2s.to_tensor(np.array([0, 1, 2]))),
        opt="adamw")
