"""Model code as users port it: PPO updates of a discrete (Categorical) and a
continuous (Gaussian, learnable log-std) actor-critic, each update one
converted training step (loss.backward + optimizer.step inside
`to_static`), several steps on numpy and xla against the same steps run
eagerly; and the discrete actor's action draws inside a converted rollout
with a None batch dim."""
import warnings

import numpy as np
import pytest

import d2s
import d2s.distribution as D
from d2s import nn
from d2s.static import InputSpec
from d2s.static.backend import BackendFallbackWarning

OBS = np.random.default_rng(0).standard_normal((6, 4)).astype("float32")
ADV = np.random.default_rng(1).standard_normal(6).astype("float32")
RET = np.random.default_rng(2).standard_normal(6).astype("float32")


class DiscreteActorCritic(nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.pi = nn.Linear(8, 3)
        self.v = nn.Linear(8, 1)

    def forward(self, obs):
        h = d2s.tanh(self.body(obs))
        # Paddle's Categorical reads probabilities in log_prob: give it softmax(logits)
        return D.Categorical(nn.functional.softmax(self.pi(h), -1)), self.v(h).squeeze(-1)


class GaussianActorCritic(nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.mu = nn.Linear(8, 2)
        self.v = nn.Linear(8, 1)
        self.log_std = self.create_parameter([2], default_initializer=nn.initializer.Constant(
            -0.5))

    def forward(self, obs):
        h = d2s.tanh(self.body(obs))
        return D.Independent(D.Normal(self.mu(h), d2s.exp(self.log_std)), 1), \
            self.v(h).squeeze(-1)


def _ppo_loss(model, obs, actions, old_logp, adv, ret, clip=0.2):
    dist, value = model(obs)
    logp = dist.log_prob(actions)
    if len(logp.shape) == 2:  # the Categorical's (batch, 1) values
        logp = logp.squeeze(-1)
    ratio = d2s.exp(logp - old_logp)
    surrogate = d2s.minimum(ratio * adv, d2s.clip(ratio, 1 - clip, 1 + clip) * adv)
    return -surrogate.mean() + 0.5 * ((value - ret) ** 2).mean() - 0.01 * dist.entropy().mean()


def _rollout(model, discrete):
    d2s.seed(4)
    with d2s.no_grad():
        dist, _ = model(d2s.to_tensor(OBS))
        a = dist.sample([1])[0]
        if discrete:
            a = a.unsqueeze(-1)
        old = dist.log_prob(a)
        old = old.squeeze(-1) if discrete else old
    return a, old.detach()


def _train(cls, step_fn_of, steps=3):
    d2s.seed(0)
    model = cls()
    opt = d2s.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    actions, old_logp = _rollout(model, cls is DiscreteActorCritic)

    def step(obs, actions, old_logp, adv, ret):
        loss = _ppo_loss(model, obs, actions, old_logp, adv, ret)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    run = step_fn_of(step)
    losses = [float(run(d2s.to_tensor(OBS), actions, old_logp, d2s.to_tensor(ADV),
                        d2s.to_tensor(RET)).numpy()) for _ in range(steps)]
    return losses, [p.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("cls", [DiscreteActorCritic, GaussianActorCritic],
                         ids=["categorical", "gaussian"])
def test_ppo_training_steps_eager_equals_static(cls, backend):
    want = _train(cls, lambda f: f)
    specs = [InputSpec([None, 4], "float32"), None, InputSpec([None], "float32"),
             InputSpec([None], "float32"), InputSpec([None], "float32")]

    def convert(f):
        return d2s.jit.to_static(f, input_spec=specs, backend=backend)

    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        got = _train(cls, convert)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    assert want[0][0] != want[0][-1]  # the steps changed the model
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_rollout_draws_like_eager(backend):
    d2s.seed(0)
    model = DiscreteActorCritic()

    def act(obs):
        dist, value = model(obs)
        a = dist.sample([1])[0]
        return a, dist.log_prob(a.unsqueeze(-1)).squeeze(-1), value

    d2s.seed(7)
    want = [t.numpy() for t in act(d2s.to_tensor(OBS))]
    static = d2s.jit.to_static(act, input_spec=[InputSpec([None, 4], "float32")],
                               backend=backend)
    d2s.seed(7)
    got = [t.numpy() for t in static(d2s.to_tensor(OBS))]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)
