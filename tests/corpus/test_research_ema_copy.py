"""`copy_` and `masked_fill_`, the in-place forms research code uses: an
EMA of the weights kept with `p_ema.copy_(p_ema * d + p * (1 - d))` under
`no_grad` after each optimizer step (and initialised with `copy_`), and
attention scores masked with `scores.masked_fill_(mask, value)`. Inside a
converted training step the EMA writes become writes the program replays,
and in a converted forward they rebind the receiver. Compared with eager
(losses, the EMA and the model after several steps; outputs and input
gradients) on numpy and xla; eagerly against numpy."""
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


RNG = np.random.RandomState(0)
DATA = [(RNG.randn(5, 4).astype("float32"), RNG.randint(0, 3, 5)) for _ in range(4)]


def train_with_ema(backend=None, decay=0.9):
    d2s.seed(0)
    model = MLP()
    d2s.seed(1)
    ema = MLP()
    with d2s.no_grad():
        for p_ema, p in zip(ema.parameters(), model.parameters()):
            p_ema.copy_(p)
    opt = d2s.optimizer.Adam(0.05, parameters=model.parameters())

    def step(x, y):
        logits = model(x)
        logits.masked_fill_(y.unsqueeze(1) == d2s.arange(3).unsqueeze(0), 0.0)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        with d2s.no_grad():
            for p_ema, p in zip(ema.parameters(), model.parameters()):
                p_ema.copy_(p_ema * decay + p * (1 - decay))
        return loss

    if backend is not None:
        step = d2s.jit.to_static(step, backend=backend)
    losses = [step(t(x), t(y)).numpy() for x, y in DATA]
    return losses, {k: v.numpy() for k, v in ema.state_dict().items()}, model


def test_eager_ema_is_the_running_average():
    _, ema, model = train_with_ema()
    assert not np.allclose(ema["fc1.weight"], model.fc1.weight.numpy())
    d2s.seed(0)
    start = MLP().fc1.weight.numpy()
    # the EMA lies between the start and the trained weights, elementwise
    lo = np.minimum(start, model.fc1.weight.numpy()) - 0.2
    hi = np.maximum(start, model.fc1.weight.numpy()) + 0.2
    assert np.all((ema["fc1.weight"] >= lo) & (ema["fc1.weight"] <= hi))


@pytest.mark.parametrize("backend", BACKENDS)
def test_converted_step_keeps_the_ema_like_eager(backend):
    losses, ema, model = train_with_ema()
    s_losses, s_ema, s_model = train_with_ema(backend)
    for i, (a, e) in enumerate(zip(s_losses, losses)):
        close(a, e, backend, f"step {i}: loss")
    for k in ema:
        close(s_ema[k], ema[k], backend, f"ema {k}")
    for (k, a), b in zip(s_model.state_dict().items(), model.state_dict().values()):
        close(a.numpy(), b.numpy(), backend, k)


def masked_attention(x, mask):
    scores = x @ x.T
    scores.masked_fill_(mask, -1e9)
    out = x.clone()
    out.copy_(F.softmax(scores, -1) @ x)
    return out


def reference(x, mask):
    s = np.where(mask, -1e9, x @ x.T)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ x


@pytest.mark.parametrize("backend", [None] + BACKENDS)
def test_in_place_forms_in_a_forward(backend):
    x = RNG.randn(4, 3).astype("float32")
    mask = np.triu(np.ones((4, 4), bool), 1)
    fn = masked_attention if backend is None else d2s.jit.to_static(masked_attention,
                                                                    backend=backend)
    xs = t(x)
    xs.stop_gradient = False
    out = fn(xs, d2s.to_tensor(mask))
    np.testing.assert_allclose(out.numpy(), reference(x, mask), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    xe = t(x)
    xe.stop_gradient = False
    masked_attention(xe, d2s.to_tensor(mask)).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert np.abs(xe.grad.numpy()).sum() > 0


def test_copy_broadcasts_and_casts():
    a = d2s.zeros([2, 3], dtype="int64")
    assert a.copy_(d2s.to_tensor([1.7, 2.2, 3.9])) is a
    np.testing.assert_array_equal(a.numpy(), [[1, 2, 3], [1, 2, 3]])
    with pytest.raises(ValueError):
        a.copy_(d2s.ones([4]))
