"""Numbers drawn with Python's `random` or numpy's global generator inside
converted code, as training scripts do: mixup's `lam = np.random.beta(a,
a)` in the training step, epsilon-greedy's `if random.random() < eps`, a
random crop size. Eagerly each call draws a new number; traced as plain
Python the program would reuse the one drawn while tracing. The converted
code draws again on every run, from the same generator in the same order:
with the generators seeded alike, eager and converted runs give the same
numbers (numpy and xla). A program holding such a draw cannot be saved."""
import random

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, t


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


RNG = np.random.RandomState(0)
DATA = [(RNG.randn(6, 4).astype("float32"), RNG.randint(0, 3, 6)) for _ in range(4)]


def mixup_training(backend=None, alpha=0.4):
    d2s.seed(0)
    np.random.seed(1)
    model = Net()
    opt = d2s.optimizer.SGD(0.1, parameters=model.parameters())

    def step(x, y):
        lam = np.random.beta(alpha, alpha)
        perm = d2s.randperm(x.shape[0])
        mixed = lam * x + (1 - lam) * x[perm]
        logits = model(mixed)
        loss = lam * F.cross_entropy(logits, y) + (1 - lam) * F.cross_entropy(logits, y[perm])
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss, lam

    if backend is not None:
        step = d2s.jit.to_static(step, input_spec=[InputSpec([None, 4]),
                                                   InputSpec([None], "int64")], backend=backend)
    out = [[float(v) for v in step(t(x), t(y))] for x, y in DATA]
    return out, {k: v.numpy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("backend", BACKENDS)
def test_mixup_step_draws_a_new_lambda_every_run(backend):
    expected, expected_state = mixup_training()
    actual, state = mixup_training(backend)
    lams = [lam for _, lam in actual]
    assert len(set(lams)) == len(lams)            # a new number on every run
    np.random.seed(1)
    assert lams == pytest.approx([np.random.beta(0.4, 0.4) for _ in lams])
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a == pytest.approx(e, rel=1e-5), f"step {i}"
    for k in expected_state:
        close(state[k], expected_state[k], "xla", k)


def act(q, eps):
    if random.random() < eps:
        action = d2s.randint(0, q.shape[-1], [1])[0]
    else:
        action = q.argmax(-1)
    return action


@pytest.mark.parametrize("backend", BACKENDS)
def test_epsilon_greedy_branches_on_a_fresh_draw(backend):
    static = d2s.jit.to_static(act, backend=backend)
    q = t(np.array([0.1, 0.9, 0.3], "float32"))
    runs = {}
    for name, fn in (("eager", act), ("static", static)):
        random.seed(3)
        d2s.seed(3)
        runs[name] = [int(fn(q, 0.5)) for _ in range(12)]
    assert runs["static"] == runs["eager"]
    assert set(runs["eager"]) != {1}              # some random actions were taken


def jitter(x):
    return x + np.random.normal(0.0, 0.1, size=x.shape[-1]).astype("float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_array_drawn_by_numpy(backend):
    static = d2s.jit.to_static(jitter, backend=backend)
    x = t(np.zeros((2, 3), "float32"))
    np.random.seed(5)
    expected = [jitter(x).numpy() for _ in range(3)]
    np.random.seed(5)
    actual = [static(x).numpy() for _ in range(3)]
    for a, e in zip(actual, expected):
        close(a, e, backend, "jittered")
    assert not np.allclose(actual[0], actual[1])


def test_a_program_with_a_python_draw_is_not_saved(tmp_path):
    class Noisy(nn.Layer):
        def forward(self, x):
            return x * random.random()

    with pytest.raises(TypeError, match=r"random\.random.*d2s's own ops"):
        d2s.jit.save(Noisy(), str(tmp_path / "m"), input_spec=[InputSpec([None])])
