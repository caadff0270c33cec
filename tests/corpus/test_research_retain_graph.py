"""`loss.backward(retain_graph=True)` (Paddle's and PyTorch's keyword), as
actor-critic code calls it when two losses share a trunk: the actor's loss
backward first, keeping the graph, then the critic's; the shared weights
get both gradients. Eagerly and in a converted training step (numpy, xla)
the update equals one backward of the summed losses."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F

from harness import BACKENDS, close, t


class ActorCritic(nn.Layer):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(4, 8)
        self.pi = nn.Linear(8, 3)
        self.v = nn.Linear(8, 1)

    def forward(self, s):
        h = F.tanh(self.trunk(s))
        return F.log_softmax(self.pi(h), -1), self.v(h).squeeze(-1)


RNG = np.random.RandomState(0)
DATA = [(RNG.randn(5, 4).astype("float32"), RNG.randint(0, 3, 5), RNG.randn(5).astype("float32"))
        for _ in range(3)]


def train(mode, backend=None):
    d2s.seed(0)
    model = ActorCritic()
    opt = d2s.optimizer.SGD(0.1, parameters=model.parameters())

    def step(s, a, ret):
        logp, v = model(s)
        adv = (ret - v).detach()
        actor = -(d2s.take_along_axis(logp, a.unsqueeze(-1), -1).squeeze(-1) * adv).mean()
        critic = F.mse_loss(v, ret)
        if mode == "two_backwards":
            actor.backward(retain_graph=True)
            critic.backward()
        else:
            (actor + critic).backward()
        opt.step()
        opt.clear_grad()
        return actor, critic

    if backend is not None:
        step = d2s.jit.to_static(step, backend=backend)
    out = [[v.numpy() for v in step(t(s), t(a), t(r))] for s, a, r in DATA]
    return out, {k: v.numpy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("backend", [None] + BACKENDS)
def test_two_backwards_through_a_shared_trunk(backend):
    expected, expected_state = train("summed")
    actual, state = train("two_backwards", backend)
    for i, (a, e) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6, err_msg=f"step {i}")
    for k in expected_state:
        close(state[k], expected_state[k], "xla", k)
    assert not np.allclose(state["trunk.weight"], ActorCritic().trunk.weight.numpy())
