"""Gradient hooks on activations in converted code, as domain-adaptation
(DANN's gradient reversal) and gradient-scaling code writes them:
`feat.register_hook(lambda g: -lam * g)` in `forward`. The hook rewrites
the gradient reaching the value, in the program's backward as eagerly:
compared with eager (losses, gradients, parameters over several steps)
with the forward converted and with the whole training step converted, on
numpy and xla. Registering a hook on a value that ops already read (part
of its gradient would go around it) is a clear error."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, t, train_and_compare


class DANN(nn.Layer):
    def __init__(self, lam=0.5):
        super().__init__()
        self.lam = lam
        self.features = nn.Linear(4, 6)
        self.label_head = nn.Linear(6, 3)
        self.domain_head = nn.Linear(6, 1)

    def forward(self, x, y, domain):
        feat = F.relu(self.features(x))
        reversed_feat = feat * 1.0
        if not reversed_feat.stop_gradient:
            reversed_feat.register_hook(lambda g: -self.lam * g)
        cls_loss = F.cross_entropy(self.label_head(feat), y)
        dom_logit = self.domain_head(reversed_feat).squeeze(-1)
        dom_loss = F.binary_cross_entropy_with_logits(dom_logit, domain)
        return cls_loss + dom_loss


RNG = np.random.RandomState(0)
BATCHES = [(RNG.randn(n, 4).astype("float32"), RNG.randint(0, 3, n),
            (RNG.rand(n) > 0.5).astype("float32")) for n in (6, 4, 6)]
SPEC = [InputSpec([None, 4]), InputSpec([None], "int64"), InputSpec([None])]


def test_eager_hook_reverses_the_domain_gradient():
    d2s.seed(0)
    model = DANN()
    x, y, dom = (t(b) for b in BATCHES[0])
    model(x, y, dom).backward()
    with_hook = model.features.weight.grad.numpy().copy()
    model.clear_gradients()
    model.lam = -1.0     # the hook then leaves the gradient as it is
    model(x, y, dom).backward()
    plain = model.features.weight.grad.numpy()
    assert not np.allclose(with_hook, plain)


@pytest.mark.parametrize("backend", BACKENDS)
def test_converted_forward_with_a_hook_trains_like_eager(backend):
    train_and_compare(DANN, BATCHES, backend, SPEC, opt="sgd", lr=0.1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_converted_training_step_with_a_hook(backend):
    results = []
    for static in (False, True):
        d2s.seed(0)
        model = DANN()
        opt = d2s.optimizer.SGD(0.1, parameters=model.parameters())

        def step(x, y, dom):
            loss = model(x, y, dom)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        if static:
            step = d2s.jit.to_static(step, input_spec=SPEC, backend=backend)
        losses = [step(*(t(b) for b in batch)).numpy() for batch in BATCHES]
        results.append((losses, {k: v.numpy() for k, v in model.state_dict().items()}))
    (e_losses, e_state), (losses, state) = results
    for i, (a, e) in enumerate(zip(losses, e_losses)):
        close(a, e, "xla", f"step {i}: loss")
    for k in e_state:
        close(state[k], e_state[k], "xla", k)


def hook_after_use(x, w):
    h = x @ w
    y = h * 2.0
    h.register_hook(lambda g: g * 0.0)
    return (y + h).sum()


def test_a_hook_after_the_value_was_read_is_a_clear_error():
    static = d2s.jit.to_static(hook_after_use)
    w = t(np.ones((3, 2), "float32"))
    w.stop_gradient = False
    with pytest.raises(RuntimeError, match=r"register_hook .*line \d+.*after ops already read"):
        static(t(np.ones((2, 3), "float32")), w).backward()
