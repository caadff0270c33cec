"""Paddle's dropout arguments as model code passes them: `nn.Dropout(p,
mode='downscale_in_infer')` (older ERNIE/PaddleClas configs), `axis=` (a
mask shared along the other dims: channel dropout), and
`F.dropout(x, p, training=..., mode=...)`; they raised TypeError.

Expected values from their definitions (the mask recovered from the
output); eager and converted draw the same masks under the same seed, on
numpy and xla."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS


def test_modes_and_axis_follow_their_definitions():
    x = d2s.to_tensor(np.arange(1, 25, dtype="float32").reshape(2, 3, 4))
    d2s.seed(1)
    down = F.dropout(x, 0.25, training=True, mode="downscale_in_infer").numpy()
    kept = down != 0
    np.testing.assert_array_equal(down[kept], x.numpy()[kept])  # kept as they are
    assert 0 < kept.sum() < kept.size
    np.testing.assert_allclose(F.dropout(x, 0.25, training=False,
                                         mode="downscale_in_infer").numpy(), x.numpy() * 0.75)
    assert F.dropout(x, 0.25, training=False) is x
    d2s.seed(2)
    up = F.dropout(x, 0.5, axis=[0, 1]).numpy()
    per_channel = (up != 0).all(axis=2) | (up == 0).all(axis=2)  # one draw per (n, c)
    assert per_channel.all()
    np.testing.assert_allclose(up[up != 0], x.numpy()[up != 0] * 2.0)
    with pytest.raises(ValueError, match="mode must be one of"):
        F.dropout(x, 0.5, mode="scale")
    with pytest.raises(TypeError, match="pass training= by keyword"):
        F.dropout(x, 0.5, False)


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.3, mode="downscale_in_infer")
        self.channel_drop = nn.Dropout(0.5, axis=1)

    def forward(self, x):
        h = self.channel_drop(self.drop(self.fc(x)))
        return F.dropout(h, 0.2, training=self.training, mode="upscale_in_train")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("training", [True, False])
def test_converted_dropout_draws_what_eager_draws(backend, training):
    d2s.seed(0)
    eager = Block()
    model = Block()
    model.set_state_dict(eager.state_dict())
    for m in (eager, model):
        m.train() if training else m.eval()
    static = d2s.jit.to_static(model, backend=backend, input_spec=[InputSpec([None, 3, 4])])
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    outs = []
    for layer in (eager, static):
        d2s.seed(7)
        t = d2s.to_tensor(x, stop_gradient=False)
        out = layer(t)
        out.sum().backward()
        outs.append((out.numpy(), t.grad.numpy()))
    for s, e in zip(outs[1], outs[0]):
        np.testing.assert_allclose(s, e, rtol=1e-5, atol=1e-6)
