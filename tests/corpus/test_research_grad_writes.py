"""Gradients rescaled by hand inside a converted training step, as research
code clips or unscales them between `loss.backward()` and `opt.step()`:
`p.grad.set_value(p.grad * scale)` (PaddlePaddle's in-place write),
the same through a local alias (`g = p.grad; g.set_value(...)`), and
`paddle.assign(g * scale, p.grad)`. While a step is traced `p.grad` holds a
program value; each form must write it so that the update reads the scaled
gradient, as eagerly. Losses, the global norm and the parameters after
several steps are compared with eager on numpy and xla."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F

from harness import BACKENDS, close, t


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.fc2 = nn.Linear(6, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def by_set_value(p, scale):
    p.grad.set_value(p.grad * scale)


def by_alias(p, scale):
    g = p.grad
    g.set_value(g * scale)


def by_assign(p, scale):
    d2s.assign(p.grad * scale, p.grad)


WRITES = {"set_value": by_set_value, "alias_set_value": by_alias, "assign_output": by_assign}
RNG = np.random.RandomState(0)
DATA = [(RNG.randn(5, 4).astype("float32"), RNG.randint(0, 3, 5)) for _ in range(4)]


def train(write, backend=None):
    d2s.seed(0)
    model = MLP()
    opt = d2s.optimizer.SGD(0.5, parameters=model.parameters())

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        norm = d2s.sqrt(sum([(p.grad ** 2).sum() for p in model.parameters()]))
        scale = d2s.clip(0.3 / (norm + 1e-6), max=1.0)   # clip to a global norm of 0.3
        for p in model.parameters():
            if p.grad is not None:
                write(p, scale)
        opt.step()
        opt.clear_grad()
        return loss, norm

    if backend is not None:
        step = d2s.jit.to_static(step, backend=backend)
    out = [[v.numpy() for v in step(t(x), t(y))] for x, y in DATA]
    return out, {k: v.numpy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("write", list(WRITES))
def test_gradients_written_by_hand_in_a_converted_step(write, backend):
    expected, expected_state = train(WRITES[write])
    actual, state = train(WRITES[write], backend)
    for i, (a, e) in enumerate(zip(actual, expected)):
        close(a[0], e[0], backend, f"step {i}: loss")
        close(a[1], e[1], backend, f"step {i}: grad norm")
    assert expected[0][1] > 0.3          # the clipping really scaled the gradients
    for k in expected_state:
        close(state[k], expected_state[k], backend, k)


def test_set_value_keeps_the_shape():
    model = MLP()
    opt = d2s.optimizer.SGD(0.1, parameters=model.parameters())

    @d2s.jit.to_static
    def step(x, y):
        F.cross_entropy(model(x), y).backward()
        model.fc1.weight.grad.set_value(d2s.zeros([3]))
        opt.step()

    with pytest.raises(ValueError, match=r"set_value: a value of shape \[3\]"):
        step(t(DATA[0][0]), t(DATA[0][1]))
