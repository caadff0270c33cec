"""The actor-critic and REINFORCE example scripts ported to Paddle names:
a policy with an action head and a value head, a toy environment stepped
in numpy between calls of the converted `forward`, actions sampled on the
host from the returned probabilities (or with `paddle.multinomial` inside a
converted `select_action` that appends the log-probability to a list the
policy keeps across calls), discounted returns built with
`returns.insert(0, R)`, normalized, per-step policy and value losses
stacked and summed, one Adam step per episode, and
`del model.rewards[:]`. Eager and converted runs agree on numpy and xla."""
import numpy as np
import pytest

import d2s as paddle
import d2s.nn as nn
import d2s.nn.functional as F

from harness import BACKENDS

EPS = float(np.finfo(np.float32).eps)


class Env:
    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)

    def reset(self):
        self.t, self.s = 0, self.rng.randn(4).astype("float32")
        return self.s

    def step(self, action):
        self.t += 1
        self.s = (self.s * 0.9 + (action - 0.5) * 0.1 + self.rng.randn(4) * 0.01).astype("float32")
        return self.s, float(1.0 - abs(self.s[0])), self.t >= 4


class Policy(nn.Layer):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 16)
        self.action_head = nn.Linear(16, 2)
        self.value_head = nn.Linear(16, 1)
        self.saved_actions, self.saved_log_probs, self.rewards = [], [], []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        return F.softmax(self.action_head(x), axis=-1), self.value_head(x)


def discounted(rewards, gamma=0.99):
    R, returns = 0.0, []
    for r in rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = paddle.to_tensor(np.array(returns, "float32"))
    return (returns - returns.mean()) / (returns.std() + EPS)


def actor_critic(backend, convert, episodes=2):
    paddle.seed(0)
    model = Policy()
    if convert:
        model.forward = paddle.jit.to_static(model.forward, backend=backend)
    opt = paddle.optimizer.Adam(learning_rate=3e-2, parameters=model.parameters())
    env, rng, record = Env(5), np.random.RandomState(7), []
    for _ in range(episodes):
        state, done = env.reset(), False
        while not done:
            probs, value = model(paddle.to_tensor(state).unsqueeze(0))
            p = probs.numpy()[0].astype("float64")
            action = int(rng.choice(2, p=p / p.sum()))
            model.saved_actions.append((paddle.log(probs[0, action]), value))
            state, reward, done = env.step(action)
            model.rewards.append(reward)
        policy_losses, value_losses = [], []
        for (log_prob, value), R in zip(model.saved_actions, discounted(model.rewards)):
            policy_losses.append(-log_prob * (R - value.item()))
            value_losses.append(F.smooth_l1_loss(value.reshape([-1]), R.reshape([1])))
        opt.clear_grad()
        loss = paddle.stack(policy_losses).sum() + paddle.stack(value_losses).sum()
        loss.backward()
        opt.step()
        del model.rewards[:]
        del model.saved_actions[:]
        record.append(loss.numpy())
    return record + [p.numpy() for p in model.parameters()]


def reinforce(backend, convert, episodes=2):
    paddle.seed(0)
    policy = Policy()
    opt = paddle.optimizer.Adam(learning_rate=1e-2, parameters=policy.parameters())

    def select_action(state):
        probs, _ = policy(paddle.to_tensor(state, dtype="float32").unsqueeze(0))
        action = paddle.multinomial(probs, 1)
        policy.saved_log_probs.append(paddle.log(probs[0, action[0, 0]]))
        return action.item()

    if convert:
        select_action = paddle.jit.to_static(select_action, backend=backend)
    env, record = Env(3), []
    for _ in range(episodes):
        state, done = env.reset(), False
        while not done:
            state, reward, done = env.step(select_action(state))
            policy.rewards.append(reward)
        loss = paddle.stack([-lp * R for lp, R in zip(policy.saved_log_probs,
                                                      discounted(policy.rewards))]).sum()
        opt.clear_grad()
        loss.backward()
        opt.step()
        del policy.rewards[:]
        del policy.saved_log_probs[:]
        record.append(loss.numpy())
    return record + [p.numpy() for p in policy.parameters()]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("script", [actor_critic, reinforce], ids=["actor_critic", "reinforce"])
def test_rl_script_matches_eager(backend, script):
    expected = script(backend, False)
    actual = script(backend, True)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6, err_msg=f"record {i}")
