"""nn.RNNCellBase: a custom cell built on it runs under nn.RNN (eager and
converted, numpy and xla) as a hand-written loop does; the built-in cells
derive from it and their initial states are zeros of the right shapes."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static


class Accumulate(nn.RNNCellBase):
    """h' = tanh(x W + h), states (h, count)."""

    def __init__(self, n):
        super().__init__()
        self.w = self.create_parameter([n, n])

    @property
    def state_shape(self):
        return ((self.w.shape[0],), (1,))

    def forward(self, x, states=None):
        if states is None:
            states = self.get_initial_states(x, init_value=0.0)
        h, count = states
        h = d2s.tanh(d2s.matmul(x, self.w) + h)
        return h, (h, count + 1.0)


def _loop(cell, x):
    h = np.zeros((x.shape[0], x.shape[2]), np.float32)
    w = cell.w.numpy()
    outs = []
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ w + h)
        outs.append(h)
    return np.stack(outs, 1), h


@pytest.mark.parametrize("backend", [None, "numpy", "xla"])
def test_custom_cell_under_rnn(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    d2s.seed(0)
    cell = Accumulate(3)
    rnn = nn.RNN(cell)
    x = np.random.default_rng(0).standard_normal((2, 4, 3)).astype(np.float32)
    fn = rnn if backend is None else to_static(lambda t: rnn(t), backend=backend)
    outs, (h, count) = fn(d2s.to_tensor(x))
    want_outs, want_h = _loop(cell, x)
    np.testing.assert_allclose(outs.numpy(), want_outs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(count.numpy(), np.full((2, 1), 4.0, np.float32))


def test_builtin_cells_derive_from_it():
    x = d2s.to_tensor(np.zeros((5, 2), np.float32))
    for cell, shapes in ((nn.SimpleRNNCell(2, 3), [(5, 3)]), (nn.LSTMCell(2, 3), [(5, 3)] * 2),
                         (nn.GRUCell(2, 3), [(5, 3)])):
        assert isinstance(cell, nn.RNNCellBase)
        states = cell.get_initial_states(x, init_value=1.5)
        flat = list(states) if isinstance(states, (list, tuple)) else [states]
        assert [tuple(s.shape) for s in flat] == shapes
        assert all(np.all(s.numpy() == 1.5) for s in flat)
    with pytest.raises(NotImplementedError, match="state_shape"):
        nn.RNNCellBase().get_initial_states(x)
