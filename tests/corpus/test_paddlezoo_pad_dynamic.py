"""Reflection, replication and circular padding under an InputSpec's `None`
spatial dims, as PaddleGAN-style generators write them (`nn.Pad2D(1,
mode='reflect')` before each conv of a residual block) and as they are
exported for any image size.

The gathered indices are computed in the program from the run-time size:
eager and converted agree on values and gradients, on numpy and xla, at
several sizes; a reflection wider than the input raises as eager does."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS


class ResnetBlock(nn.Layer):
    def __init__(self, mode):
        super().__init__()
        self.block = nn.Sequential(nn.Pad2D(1, mode=mode), nn.Conv2D(2, 2, 3),
                                   nn.InstanceNorm2D(2), nn.ReLU(),
                                   nn.Pad2D([2, 0, 1, 1], mode=mode), nn.Conv2D(2, 2, 3))

    def forward(self, x):
        return self.block(x)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_of_run_time_sizes_matches_eager(backend, mode):
    d2s.seed(0)
    eager = ResnetBlock(mode)
    model = ResnetBlock(mode)
    model.set_state_dict(eager.state_dict())
    static = d2s.jit.to_static(model.forward, backend=backend,
                               input_spec=[InputSpec([None, 2, None, None], "float32")])
    rng = np.random.default_rng(0)
    for shape in [(2, 2, 4, 5), (1, 2, 6, 3)]:
        img = rng.normal(size=shape).astype("float32")
        outs = []
        for fn, layer in ((eager, eager), (static, model)):
            x = d2s.to_tensor(img, stop_gradient=False)
            out = fn(x)
            (out * out).sum().backward()
            outs.append((out.numpy(), x.grad.numpy(), layer.block[1].weight.grad.numpy()))
            layer.clear_gradients()
        for s, e in zip(outs[1], outs[0]):
            assert s.shape == e.shape
            np.testing.assert_allclose(s, e, rtol=1e-4, atol=1e-4)  # (instance norm on xla)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reflection_wider_than_the_input_raises(backend):
    def pad(x):
        return F.pad(x, [2, 2], mode="reflect", data_format="NCL")

    static = d2s.jit.to_static(pad, backend=backend, input_spec=[InputSpec([None, 1, None])])
    x = d2s.to_tensor(np.arange(3, dtype="float32").reshape(1, 1, 3))
    np.testing.assert_array_equal(static(x).numpy(), [[[2, 1, 0, 1, 2, 1, 0]]])
    with pytest.raises(ValueError, match="must be smaller than"):
        pad(d2s.ones([1, 1, 2]))  # eager
    with pytest.raises(AssertionError, match=r"reflect padding \(2, 2\) must be smaller"):
        static(d2s.ones([1, 1, 2]))
