"""Discounted returns computed backwards, each put in front of a list, as
REINFORCE and n-step actor-critic code writes them:

    R = 0; returns = []
    for r in reversed(range(len(rewards))): R = rewards[r] + gamma * R; returns.insert(0, R)

With an episode of `None` length the loop is a loop on a tensor, and the
list a tensor array it carries: `insert(0, v)` puts `v` before its rows.
A whole REINFORCE update converted (episodes of different lengths, one
program) and n-step returns with their gradient are compared with eager on
numpy and xla; another insert position is a clear error."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec
from d2s.static.control_flow import ControlFlowError

from harness import BACKENDS, close, t


class Policy(nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, s):
        return self.head(F.tanh(self.body(s)))


def reinforce(backend=None, gamma=0.9):
    d2s.seed(0)
    policy = Policy()
    opt = d2s.optimizer.Adam(0.01, parameters=policy.parameters())

    def update(states, actions, rewards):
        R = 0.0
        returns = []
        for i in reversed(range(rewards.shape[0])):
            R = rewards[i] + gamma * R
            returns.insert(0, R)
        returns = d2s.stack(returns)
        returns = (returns - returns.mean()) / (returns.std() + 1e-6)
        logp = F.log_softmax(policy(states), -1)
        picked = d2s.take_along_axis(logp, actions.unsqueeze(-1), axis=-1).squeeze(-1)
        loss = -(picked * returns).sum()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss, returns

    if backend is not None:
        spec = [InputSpec([None, 4]), InputSpec([None], "int64"), InputSpec([None])]
        update = d2s.jit.to_static(update, input_spec=spec, backend=backend)
    rng = np.random.RandomState(1)
    out = []
    for n in (5, 3, 6):
        loss, returns = update(t(rng.randn(n, 4)), t(rng.randint(0, 3, n)), t(rng.randn(n)))
        out.append((loss.numpy(), returns.numpy()))
    return out, {k: v.numpy() for k, v in policy.state_dict().items()}, update


def discounted(rewards, gamma=0.9):
    R, out = 0.0, []
    for r in rewards[::-1]:
        R = r + gamma * R
        out.insert(0, R)
    return np.array(out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reinforce_update_over_episodes_of_any_length(backend):
    expected, expected_state, _ = reinforce()
    actual, state, update = reinforce(backend)
    rng = np.random.RandomState(1)
    for i, ((loss, ret), (e_loss, e_ret)) in enumerate(zip(actual, expected)):
        n = len(e_ret)
        rng.randn(n, 4), rng.randint(0, 3, n)
        r = discounted(rng.randn(n).astype("float32"))
        np.testing.assert_allclose(e_ret, (r - r.mean()) / (r.std(ddof=1) + 1e-6), rtol=1e-4)
        close(ret, e_ret, "xla", f"episode {i}: returns")
        close(loss, e_loss, "xla", f"episode {i}: loss")
    for k in expected_state:
        close(state[k], expected_state[k], "xla", k)
    assert len(update.program_cache) == 1


def nstep(rewards, dones, last_value, gamma=0.99):
    R = last_value
    out = []
    for i in range(rewards.shape[0] - 1, -1, -1):
        R = rewards[i] + gamma * R * (1.0 - dones[i])
        out.insert(0, R)
    return d2s.stack(out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nstep_returns_and_their_gradient(backend):
    spec = [InputSpec([None, 2]), InputSpec([None, 2]), InputSpec([2])]
    static = d2s.jit.to_static(nstep, input_spec=spec, backend=backend)
    rng = np.random.RandomState(2)
    for n in (4, 2):
        r, d = rng.randn(n, 2).astype("float32"), (rng.rand(n, 2) > 0.7).astype("float32")
        v = rng.randn(2).astype("float32")
        results = []
        for fn in (nstep, static):
            last = t(v)
            last.stop_gradient = False
            out = fn(t(r), t(d), last)
            (out * np.arange(1, n + 1, dtype="float32")[:, None]).sum().backward()
            results.append((out.numpy(), last.grad.numpy()))
        close(results[1][0], results[0][0], backend, f"returns, n={n}")
        np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)


def insert_under_tensor_if(x, gate):
    outs = [x]
    if gate > 0:
        outs.insert(0, x * 2.0)
    return d2s.stack(outs)[0], len(outs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_insert_in_front_under_a_tensor_if(backend):
    static = d2s.jit.to_static(insert_under_tensor_if, backend=backend)
    x = t(np.array([1.0, 2.0], "float32"))
    for gate, first, n in ((1.0, [2.0, 4.0], 2), (-1.0, [1.0, 2.0], 1)):
        out, length = static(x, t(np.float32(gate)))
        np.testing.assert_array_equal(out.numpy(), first)
        assert int(length) == n
        e_out, e_len = insert_under_tensor_if(x, t(np.float32(gate)))
        np.testing.assert_array_equal(e_out.numpy(), first)
        assert e_len == n


def insert_second(x):
    out = [x[0]]
    for i in range(x.shape[0]):
        out.insert(1, x[i])
    return out


def test_another_insert_position_is_a_clear_error():
    static = d2s.jit.to_static(insert_second, input_spec=[InputSpec([None])])
    with pytest.raises(ControlFlowError, match=r"insert\(1, \.\.\.\).*only insert\(0, v\)"):
        static(t(np.ones(3, "float32")))
