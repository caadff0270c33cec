"""`RNNCellBase`, Paddle's public base of recurrent cells: a custom cell
subclasses it, defines `forward(inputs, states) -> (outputs, new_states)`
and `state_shape`, and starts from `get_initial_states(inputs)` when
`states` is None (what `nn.RNN` passes on the first step)."""
from __future__ import annotations

from ..core.ops import full
from ..core.ops._base import lift
from .common_functional import _dim_at_run_time
from .layer import Layer

__all__ = ["RNNCellBase"]


def _is_shape(s):
    return isinstance(s, (list, tuple)) and all(isinstance(d, int) for d in s)


class RNNCellBase(Layer):
    """Base of the recurrent cells (SimpleRNNCell, LSTMCell, GRUCell derive
    from it too)."""

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value=0.0,
                           batch_dim_idx=0):
        """States filled with `init_value`, each `[batch] + shape`, where the
        batch is dim `batch_dim_idx` of `batch_ref` (known at run time too);
        `shape` (default `self.state_shape`) may be nested (e.g. LSTM's
        `((h,), (h,))`) and so is the result. `dtype` defaults to
        `self.state_dtype`, else `batch_ref`'s."""
        ref = lift(batch_ref if not isinstance(batch_ref, (list, tuple)) else batch_ref[0])
        batch = _dim_at_run_time(ref, batch_dim_idx)
        shape = self.state_shape if shape is None else shape
        if dtype is None:
            dtype = getattr(self, "_state_dtype", None) or ref.dtype

        def make(s):
            if _is_shape(s):
                return full([batch] + [int(d) for d in s], init_value, dtype)
            return type(s)(make(t) for t in s)
        return make(shape)

    @property
    def state_shape(self):
        raise NotImplementedError(f"{type(self).__name__}: define the state_shape property "
                                  "(a shape without the batch dim, or a nest of them)")

    @property
    def state_dtype(self):
        return getattr(self, "_state_dtype", None)
