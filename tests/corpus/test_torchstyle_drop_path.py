"""timm-style stochastic depth: `drop_path(x, drop_prob, self.training)`
with `keep_prob = 1 - drop_prob`, a per-sample keep mask from
`d2s.bernoulli(d2s.full(shape, keep_prob))` scaled by `1 / keep_prob`, in
ConvNeXt blocks with LayerScale (`gamma`) whose drop rate grows with depth.
Training (the mask drawn per call, from the same seeded generator as eager)
and evaluation (`if not training: return x`) after `eval()` both give
eager's values and gradients on numpy and xla; `bernoulli` itself draws 0/1
with the given probabilities."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn

from harness import BACKENDS, t


def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = d2s.bernoulli(d2s.full(shape, keep_prob, dtype=x.dtype))
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor = random_tensor / keep_prob
    return x * random_tensor


class DropPath(nn.Layer):
    def __init__(self, p):
        super().__init__()
        self.drop_prob = p

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training)


class Block(nn.Layer):
    def __init__(self, dim, dp):
        super().__init__()
        self.dw = nn.Conv2D(dim, dim, 3, padding=1, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)
        self.gamma = self.create_parameter([dim], default_initializer=nn.initializer.Constant(0.5))
        self.drop_path = DropPath(dp) if dp > 0 else nn.Identity()

    def forward(self, x):
        y = self.fc(self.norm(self.dw(x).transpose([0, 2, 3, 1]))) * self.gamma
        return x + self.drop_path(y.transpose([0, 3, 1, 2]))


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.blocks = nn.LayerList([Block(3, 0.5 * i) for i in range(3)])
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return self.head(x.mean([2, 3]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_stochastic_depth_trains_and_evaluates_like_eager(backend):
    d2s.seed(0)
    eager = Net()
    model = Net()
    model.set_state_dict(eager.state_dict())
    static = d2s.jit.to_static(model, backend=backend)
    rng = np.random.RandomState(0)
    for step in range(3):
        x = rng.randn(4, 3, 4, 4).astype("float32")
        results = []
        for m, f in ((eager, eager), (model, static)):
            d2s.seed(100 + step)  # the same draws for both
            loss = (f(t(x)) ** 2).mean()
            loss.backward()
            results.append((loss.numpy(), {k: p.grad.numpy() for k, p in m.named_parameters()}))
            for p in m.parameters():
                p.set_value(p.numpy() - 0.1 * p.grad.numpy())
            m.clear_gradients()
        np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)
        for k, g in results[0][1].items():
            np.testing.assert_allclose(results[1][1][k], g, rtol=1e-5, atol=1e-6, err_msg=k)
    eager.eval()
    model.eval()
    x = t(rng.randn(2, 3, 4, 4).astype("float32"))
    np.testing.assert_allclose(static(x).numpy(), eager(x).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bernoulli_draws_zeros_and_ones_at_the_given_rate(backend):
    static = d2s.jit.to_static(lambda p: d2s.bernoulli(p), backend=backend)
    p = np.array([0.0, 0.25, 0.9, 1.0], "float32")
    draws = np.stack([static(t(np.tile(p, (500, 1)))).numpy() for _ in range(2)])
    assert draws.dtype == np.float32 and set(np.unique(draws)) <= {0.0, 1.0}
    np.testing.assert_allclose(draws.mean(axis=(0, 1)), p, atol=0.05)
    assert draws[..., 0].max() == 0.0 and draws[..., 3].min() == 1.0
    with pytest.raises(TypeError, match="float tensor"):
        d2s.bernoulli(t(np.array([1, 0])))
