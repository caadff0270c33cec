"""`d2s.assign(x, output=buf)` writes into `buf` in place (PaddlePaddle's
idiom for updating running statistics in a hand-written normalisation
layer; it raised NotImplementedError even eagerly). Inside converted code
the write is an effect of the program, replayed after each run, so the
buffer moves exactly as eagerly, on both backends."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.static import InputSpec

from harness import BACKENDS, assert_no_variables_left, close, t, twins


class RunningNorm(nn.Layer):
    """A hand-written BatchNorm1D without affine terms (PaddleDetection style)."""

    def __init__(self, d=3, momentum=0.9):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("mean", d2s.zeros([d]))
        self.register_buffer("var", d2s.ones([d]))

    def forward(self, x):
        if self.training:
            mean, var = x.mean(axis=0), x.var(axis=0, unbiased=False)
            d2s.assign(self.mean * self.momentum + mean * (1 - self.momentum), output=self.mean)
            d2s.assign(self.var * self.momentum + var * (1 - self.momentum), output=self.var)
        else:
            mean, var = self.mean, self.var
        return (x - mean) / d2s.sqrt(var + 1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_assign_into_buffers_in_forward_matches_eager(backend):
    eager, model = twins(RunningNorm)
    fn = d2s.jit.to_static(model.forward, input_spec=[InputSpec([None, 3])], backend=backend)
    rng = np.random.default_rng(0)
    for n in (4, 6, 4):
        x = t(rng.normal(2.0, 3.0, size=(n, 3)))
        close(fn(x).numpy(), eager(x).numpy(), backend, f"train output, batch {n}")
        close(model.mean.numpy(), eager.mean.numpy(), backend, "running mean")
        close(model.var.numpy(), eager.var.numpy(), backend, "running var")
        assert_no_variables_left(("model", model))
    assert not np.allclose(model.mean.numpy(), 0.0)
    eager.eval()
    model.eval()
    x = t(rng.normal(size=(2, 3)))
    close(fn(x).numpy(), eager(x).numpy(), backend, "eval output")


def test_assign_output_keeps_the_gradient_of_x():
    x = d2s.to_tensor(np.array([1.0, 2.0], "float32"))
    x.stop_gradient = False
    out = d2s.zeros([2])
    y = d2s.assign(x * 3.0, output=out)
    assert y is out
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 18.0 * np.array([1.0, 2.0]))
