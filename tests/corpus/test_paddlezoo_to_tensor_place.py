"""`paddle.to_tensor(data, dtype, place, stop_gradient)` with the `place`
argument ported code passes (`place=paddle.CPUPlace()`, "cpu"), eagerly
and inside converted forwards (it raised TypeError): values live on the
host and a backend moves them where it runs, so a place changes nothing."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn

from harness import BACKENDS


class Scaled(nn.Layer):
    def forward(self, x):
        scale = d2s.to_tensor([1.0, 2.0, 3.0], dtype="float32", place=d2s.CPUPlace())
        shift = d2s.to_tensor(0.5, place="cpu", stop_gradient=True)
        copy = d2s.to_tensor(x, place=d2s.CPUPlace(), stop_gradient=False)
        return copy * scale + shift


@pytest.mark.parametrize("backend", BACKENDS)
def test_place_is_accepted_eagerly_and_converted(backend):
    x = d2s.to_tensor(np.array([[1.0, 1.0, 1.0], [2.0, 0.0, -1.0]], "float32"))
    expected = Scaled()(x).numpy()
    np.testing.assert_allclose(expected, [[1.5, 2.5, 3.5], [2.5, 0.5, -2.5]])
    static = d2s.jit.to_static(Scaled(), backend=backend)
    np.testing.assert_allclose(static(x).numpy(), expected)


def test_positional_place_then_stop_gradient():
    t = d2s.to_tensor([1.0, 2.0], "float64", d2s.CPUPlace(), False)
    assert t.dtype == np.float64 and not t.stop_gradient
    assert not d2s.to_tensor([1.0], None, False).stop_gradient  # d2s's old third argument
