"""`for t in reversed(range(T))` with `T` known only at run time (the
episode length, a `None` dim): the backward passes of Deep RL's generalised
advantage estimation and of a tagger's Viterbi backtracking. Compared with
eager (and a numpy reference) on numpy and xla, with the critic's
gradients, for ranges with a start and a step too."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.static import InputSpec

from harness import BACKENDS, close, t


def gae(rewards, values, dones, gamma: float = 0.99, lam: float = 0.95):
    steps = rewards.shape[0]
    adv = d2s.zeros_like(rewards)
    last = 0.0
    for i in reversed(range(steps)):
        nonterminal = 1.0 - dones[i]
        delta = rewards[i] + gamma * values[i + 1] * nonterminal - values[i]
        last = delta + gamma * lam * nonterminal * last
        adv[i] = last
    return adv, adv + values[:-1]


def gae_reference(r, v, d, gamma=0.99, lam=0.95):
    adv, last = np.zeros_like(r), 0.0
    for i in range(len(r) - 1, -1, -1):
        delta = r[i] + gamma * v[i + 1] * (1 - d[i]) - v[i]
        last = delta + gamma * lam * (1 - d[i]) * last
        adv[i] = last
    return adv


def stepped(x, start: int = 1, step: int = 2):
    """Items at start, start+step, ... visited last first, as a list."""
    out = []
    for i in reversed(range(start, x.shape[0], step)):
        out.append(x[i] * (i + 1))
    return d2s.stack(out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gae_over_an_unknown_number_of_steps(backend):
    spec = [InputSpec([None], "float32")] * 3
    static = d2s.jit.to_static(gae, input_spec=spec, backend=backend)
    rng = np.random.RandomState(0)
    for n in (4, 7, 1):
        r = rng.randn(n).astype("float32")
        v = rng.randn(n + 1).astype("float32")
        d = (rng.rand(n) < 0.3).astype("float32")
        adv, ret = static(t(r), t(v), t(d))
        e_adv, e_ret = gae(t(r), t(v), t(d))
        close(adv.numpy(), e_adv.numpy(), backend, f"advantages ({n} steps)")
        close(ret.numpy(), e_ret.numpy(), backend, f"returns ({n} steps)")
        np.testing.assert_allclose(adv.numpy(), gae_reference(r, v, d), rtol=1e-5, atol=1e-6)


class Critic(nn.Layer):
    def __init__(self):
        super().__init__()
        self.v = nn.Linear(3, 1)

    def forward(self, obs, rewards, dones):
        values = self.v(obs).squeeze(-1)
        adv, ret = gae(rewards, values.detach(), dones)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        return ((values[:-1] - ret) ** 2).mean() + (adv * values[:-1]).mean()


@pytest.mark.parametrize("backend", BACKENDS)
def test_critic_loss_with_gae_differentiates_like_eager(backend):
    d2s.seed(0)
    eager = Critic()
    model = Critic()
    model.set_state_dict(eager.state_dict())
    spec = [InputSpec([None, 3]), InputSpec([None]), InputSpec([None])]
    static = d2s.jit.to_static(model.forward, input_spec=spec, backend=backend)
    rng = np.random.RandomState(1)
    for n in (5, 3):
        obs = rng.randn(n + 1, 3).astype("float32")
        r, d = rng.randn(n).astype("float32"), np.zeros(n, "float32")
        grads = []
        for m, f in ((eager, eager), (model, static)):
            loss = f(t(obs), t(r), t(d))
            loss.backward()
            grads.append((loss.numpy(), {k: p.grad.numpy() for k, p in m.named_parameters()}))
            m.clear_gradients()
        close(grads[1][0], grads[0][0], backend, "loss")
        for k, g in grads[0][1].items():
            np.testing.assert_allclose(grads[1][1][k], g, rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("start,step", [(0, 1), (1, 2), (2, 3)])
def test_reversed_range_with_start_and_step(start, step, backend):
    static = d2s.jit.to_static(lambda x: stepped(x, start, step),
                               input_spec=[InputSpec([None, 2])], backend=backend)
    for n in (7, 6):
        x = np.arange(2 * n, dtype="float32").reshape(n, 2)
        expected = np.stack([x[i] * (i + 1) for i in reversed(range(start, n, step))])
        close(static(t(x)).numpy(), expected, backend, f"{n} rows")
