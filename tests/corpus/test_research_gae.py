"""Generalized advantage estimation as RL code writes it: a reversed Python
loop over the rollout writing `adv[t] = last` into a preallocated tensor,
where `last` often has shape [1] (PaddlePaddle 2.x code builds scalars as
`paddle.zeros([1])`); then advantage normalization. A size-1 value written
into one element is dropped to the element's shape, as PyTorch and Paddle
do. Compared with a numpy reference eagerly and converted (numpy, xla),
with a `None` rollout length, and the gradient through the values."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec

from harness import BACKENDS, close, t


def gae(rewards, values, dones, gamma=0.99, lam=0.95):
    n = rewards.shape[0]
    adv = d2s.zeros_like(rewards)
    last = d2s.zeros([1])
    for i in reversed(range(n)):
        next_value = values[i + 1] if i + 1 < n else d2s.zeros([1])[0]
        nonterminal = 1.0 - dones[i]
        delta = rewards[i] + gamma * next_value * nonterminal - values[i]
        last = delta + gamma * lam * nonterminal * last
        adv[i] = last
    returns = adv + values
    norm = (adv - adv.mean()) / (adv.std() + 1e-8)
    return norm, returns


def reference(r, v, d, gamma=0.99, lam=0.95):
    adv, last = np.zeros_like(r), 0.0
    for i in reversed(range(len(r))):
        nv = v[i + 1] if i + 1 < len(r) else 0.0
        delta = r[i] + gamma * nv * (1 - d[i]) - v[i]
        last = delta + gamma * lam * (1 - d[i]) * last
        adv[i] = last
    return (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8), adv + v


def rollout(n, seed):
    rng = np.random.RandomState(seed)
    return (rng.randn(n).astype("float32"), rng.randn(n).astype("float32"),
            (rng.rand(n) > 0.7).astype("float32"))


def test_eager_matches_numpy():
    r, v, d = rollout(6, 0)
    norm, ret = gae(t(r), t(v), t(d))
    exp_norm, exp_ret = reference(r.astype("float64"), v.astype("float64"), d)
    np.testing.assert_allclose(norm.numpy(), exp_norm, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ret.numpy(), exp_ret, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("spec", [None, [InputSpec([None])] * 3], ids=["fixed", "none_dim"])
def test_converted_gae_matches_eager(backend, spec):
    static = d2s.jit.to_static(gae, input_spec=spec, backend=backend)
    for n, seed in ((6, 1), (6, 2)) if spec is None else ((6, 1), (4, 2)):
        r, v, d = rollout(n, seed)
        vals = {}
        for mode, fn in (("eager", gae), ("static", static)):
            tv = t(v)
            tv.stop_gradient = False
            norm, ret = fn(t(r), tv, t(d))
            (norm * ret).sum().backward()
            vals[mode] = (norm.numpy(), ret.numpy(), tv.grad.numpy())
        for what, a, e in zip(("norm", "returns"), vals["static"], vals["eager"]):
            close(a, e, backend, what)
        # gradients: to 1e-5 relative (DESIGN §4), summed in another order
        np.testing.assert_allclose(vals["static"][2], vals["eager"][2], rtol=1e-5, atol=1e-6)
