"""Recurrent layers (Paddle's classes, gate orders, parameter names and
initialisation): the cells `SimpleRNNCell`, `LSTMCell`, `GRUCell`; `RNN` and
`BiRNN`, which run a cell over time; `SimpleRNN`, `LSTM`, `GRU` (stacked,
optionally bidirectional, with `sequence_length`).

Each time step is a few registered ops (two products, the gates), unrolled
over the time steps when their number is known when a function is
converted; when the `input_spec` leaves it unknown, the steps are one
`while` op over the same ops (`core.control.while_loop`). With
`sequence_length`, a sequence's state stops changing after its last step and
its outputs there are zeros (a reversed pass starts at its last step), as
Paddle computes them.
"""
from __future__ import annotations

import math

from ..core.control import while_loop
from ..core.ops import (cast, concat, full, matmul, relu, set_item, shape, sigmoid, stack, tanh,
                        transpose, unsqueeze, where, zeros_like)
from ..core.ops._base import lift
from . import functional as F
from . import initializer as init
from .layer import Layer, LayerList
from .layers import _attr
from .rnn_cell_base import RNNCellBase

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "BiRNN", "SimpleRNN", "LSTM", "GRU"]


def _chunks(x, n):
    """The last axis cut into `n` equal parts (gates), by slicing."""
    size = x.shape[-1] // n
    return [x[..., i * size:(i + 1) * size] for i in range(n)]


class _Cell(RNNCellBase):
    _gates = 1

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__(name)
        if int(hidden_size) <= 0:
            raise ValueError(f"{type(self).__name__}: hidden_size must be positive, got "
                             f"{hidden_size}")
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        bound = 1.0 / math.sqrt(self.hidden_size)
        u = init.Uniform(-bound, bound)
        g = self._gates * self.hidden_size
        self.weight_ih = self.create_parameter([g, self.input_size], attr=_attr(weight_ih_attr),
                                               default_initializer=u)
        self.weight_hh = self.create_parameter([g, self.hidden_size],
                                               attr=_attr(weight_hh_attr), default_initializer=u)
        self.bias_ih = self.create_parameter([g], attr=_attr(bias_ih_attr), is_bias=True,
                                             default_initializer=u)
        self.bias_hh = self.create_parameter([g], attr=_attr(bias_hh_attr), is_bias=True,
                                             default_initializer=u)

    def _affine(self, x, w, b):
        out = matmul(x, transpose(w, [1, 0]))
        return out if b is None else out + b

    def _zeros(self, x):
        batch = x.shape[0]
        if batch is None:  # a batch known at run time: zeros shaped like x's rows
            return matmul(x * 0.0, full([self.input_size, self.hidden_size], 0.0, x.dtype))
        return full([batch, self.hidden_size], 0.0, x.dtype)

    def _check(self, x):
        if len(x.shape) != 2 or (x.shape[1] is not None and x.shape[1] != self.input_size):
            raise ValueError(f"{type(self).__name__}: expects inputs (batch, {self.input_size}),"
                             f" got {list(x.shape)}")

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}"


class SimpleRNNCell(_Cell):
    """`h = act(x W_ih^T + b_ih + h W_hh^T + b_hh)`, act 'tanh' or 'relu'."""

    def __init__(self, input_size, hidden_size, activation="tanh", weight_ih_attr=None,
                 weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        if activation not in ("tanh", "relu"):
            raise ValueError(f"SimpleRNNCell: activation must be 'tanh' or 'relu', got "
                             f"{activation!r}")
        super().__init__(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                         bias_hh_attr, name)
        self.activation = activation

    def forward(self, inputs, states=None):
        x = lift(inputs)
        self._check(x)
        h = self._zeros(x) if states is None else states
        pre = self._affine(x, self.weight_ih, self.bias_ih) + self._affine(h, self.weight_hh,
                                                                           self.bias_hh)
        h = tanh(pre) if self.activation == "tanh" else relu(pre)
        return h, h


class LSTMCell(_Cell):
    """Gates (i, f, g, o): `c = sigmoid(f) c + sigmoid(i) tanh(g)`,
    `h = sigmoid(o) tanh(c)`; states `(h, c)`."""
    _gates = 4

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, proj_size=0, name=None):
        if proj_size:
            raise NotImplementedError("LSTMCell: proj_size is not supported")
        super().__init__(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                         bias_hh_attr, name)

    def forward(self, inputs, states=None):
        x = lift(inputs)
        self._check(x)
        if states is None:
            h = c = self._zeros(x)
        else:
            h, c = states
        gates = self._affine(x, self.weight_ih, self.bias_ih) + self._affine(
            h, self.weight_hh, self.bias_hh)
        i, f, g, o = _chunks(gates, 4)
        c = sigmoid(f) * c + sigmoid(i) * tanh(g)
        h = sigmoid(o) * tanh(c)
        return h, (h, c)

    @property
    def state_shape(self):
        return ((self.hidden_size,), (self.hidden_size,))


class GRUCell(_Cell):
    """Gates (r, z, c): `r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)`,
    `c = tanh(x_c + r h_c)`, `h = (h - c) z + c`."""
    _gates = 3

    def forward(self, inputs, states=None):
        x = lift(inputs)
        self._check(x)
        h = self._zeros(x) if states is None else states
        x_r, x_z, x_c = _chunks(self._affine(x, self.weight_ih, self.bias_ih), 3)
        h_r, h_z, h_c = _chunks(self._affine(h, self.weight_hh, self.bias_hh), 3)
        r = sigmoid(x_r + h_r)
        z = sigmoid(x_z + h_z)
        c = tanh(x_c + r * h_c)
        h = (h - c) * z + c
        return h, h


def _map(states, fn):
    if isinstance(states, (tuple, list)):
        return type(states)(_map(s, fn) for s in states)
    return fn(states)


def _select(mask, new, old):
    if isinstance(new, (tuple, list)):
        return type(new)(_select(mask, n, o) for n, o in zip(new, old))
    return where(mask, new, old)


class RNN(Layer):
    """Run `cell` over the time axis (axis 1, or 0 with `time_major`);
    returns (outputs, final states)."""

    def __init__(self, cell, is_reverse=False, time_major=False):
        super().__init__()
        self.cell, self.is_reverse, self.time_major = cell, bool(is_reverse), bool(time_major)

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        x = lift(inputs)
        if len(x.shape) != 3:
            raise ValueError(f"{type(self.cell).__name__} over time: expects a 3-D input, got "
                             f"{list(x.shape)}")
        axis = 0 if self.time_major else 1
        steps = x.shape[axis]
        if steps is None:
            return self._over_unknown_steps(x, initial_states, sequence_length, kwargs)
        states = initial_states
        lengths = None if sequence_length is None else lift(sequence_length)
        order = range(steps - 1, -1, -1) if self.is_reverse else range(steps)
        outs = [None] * steps
        for t in order:
            xt = x[t] if self.time_major else x[:, t]
            out, new = self.cell(xt, states, **kwargs)
            if lengths is not None:
                alive = unsqueeze(lengths > t, 1)  # (batch, 1)
                if states is None:
                    states = _map(new, lambda s: s * 0.0)
                new = _select(alive, new, states)
                out = out * cast(alive, out.dtype)
            outs[t] = out
            states = new
        return stack(outs, axis=axis), states

    def _over_unknown_steps(self, x, states, sequence_length, kwargs):
        """The time loop as one `while` op (a converted function whose input_spec
        leaves the time dim unknown): the same cell ops per step, each step's
        output written into a (batch, time, hidden) tensor at index `t`."""
        axis = 0 if self.time_major else 1
        steps = shape(x)[axis]
        lengths = None if sequence_length is None else lift(sequence_length)

        def at(t):
            return x[t] if self.time_major else x[:, t]
        if states is None:
            # the zero states the cell starts from, shaped from a step's input
            states = _map(self.cell(at(0), None, **kwargs)[1], lambda s: s * 0.0)
        probe = self.cell(at(0), states, **kwargs)[0]
        # zeros (time, batch, hidden) or (batch, time, hidden), without reading x's values
        outs = unsqueeze(zeros_like(x[..., 0]), -1) + zeros_like(probe[0])
        start = steps - 1 if self.is_reverse else steps * 0

        def cond(t, outs, states):
            return t >= 0 if self.is_reverse else t < steps

        def body(t, outs, states):
            out, new = self.cell(at(t), states, **kwargs)
            if lengths is not None:
                alive = unsqueeze(lengths > t, 1)  # (batch, 1)
                new = _select(alive, new, states)
                out = out * cast(alive, out.dtype)
            index = (t,) if self.time_major else (slice(None), t)
            outs = set_item(outs, index, out)
            return (t - 1 if self.is_reverse else t + 1), outs, new

        _, outs, states = while_loop(cond, body, [start, outs, states])
        return outs, states


class BiRNN(Layer):
    """A forward and a backward `RNN`; outputs concatenated on the last axis,
    final states as a pair (forward, backward)."""

    def __init__(self, cell_fw, cell_bw, time_major=False):
        super().__init__()
        self.cell_fw, self.cell_bw, self.time_major = cell_fw, cell_bw, bool(time_major)

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        fw_state, bw_state = (None, None) if initial_states is None else initial_states
        out_fw, st_fw = RNN(self.cell_fw, False, self.time_major)(inputs, fw_state,
                                                                  sequence_length, **kwargs)
        out_bw, st_bw = RNN(self.cell_bw, True, self.time_major)(inputs, bw_state,
                                                                 sequence_length, **kwargs)
        return concat([out_fw, out_bw], axis=-1), (st_fw, st_bw)


_DIRECTIONS = {"forward": 1, "bidirect": 2, "bidirectional": 2}


class _RNNBase(LayerList):
    _cell = None
    _lstm = False

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward",
                 time_major=False, dropout=0.0, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, **cell_kwargs):
        super().__init__()
        name = type(self).__name__
        if direction not in _DIRECTIONS:
            raise ValueError(f"{name}: direction must be 'forward', 'bidirect' or "
                             f"'bidirectional', got {direction!r}")
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.num_layers, self.num_directions = int(num_layers), _DIRECTIONS[direction]
        self.time_major, self.dropout = bool(time_major), float(dropout)
        attrs = dict(weight_ih_attr=weight_ih_attr, weight_hh_attr=weight_hh_attr,
                     bias_ih_attr=bias_ih_attr, bias_hh_attr=bias_hh_attr, **cell_kwargs)
        for i in range(self.num_layers):
            size = self.input_size if i == 0 else self.hidden_size * self.num_directions
            if self.num_directions == 1:
                self.append(RNN(self._cell(size, self.hidden_size, **attrs),
                                time_major=self.time_major))
            else:
                self.append(BiRNN(self._cell(size, self.hidden_size, **attrs),
                                  self._cell(size, self.hidden_size, **attrs), self.time_major))

    def _split(self, initial_states):
        """Per layer (and direction) initial states from the stacked
        (num_layers * num_directions, batch, hidden) tensor(s)."""
        if initial_states is None:
            return [None] * self.num_layers
        parts = list(initial_states) if self._lstm else [initial_states]
        per = []
        for i in range(self.num_layers):
            def pick(k):
                found = [p[k] for p in parts]
                return tuple(found) if self._lstm else found[0]
            d = self.num_directions
            per.append(pick(i) if d == 1 else (pick(2 * i), pick(2 * i + 1)))
        return per

    def forward(self, inputs, initial_states=None, sequence_length=None):
        x = lift(inputs)
        finals = []
        for i, (layer, state) in enumerate(zip(self, self._split(initial_states))):
            if i and self.dropout:
                x = F.dropout(x, self.dropout, training=self.training)
            x, final = layer(x, state, sequence_length)
            finals.extend([final] if self.num_directions == 1 else list(final))
        if self._lstm:
            return x, (stack([h for h, _ in finals], 0), stack([c for _, c in finals], 0))
        return x, stack(finals, 0)

    def extra_repr(self):
        return (f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}"
                + (", bidirectional" if self.num_directions == 2 else ""))


class SimpleRNN(_RNNBase):
    _cell = SimpleRNNCell

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward",
                 time_major=False, dropout=0.0, activation="tanh", weight_ih_attr=None,
                 weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__(input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr,
                         activation=activation)


class LSTM(_RNNBase):
    """Stacked LSTM; returns (outputs, (h, c)), h and c of shape
    (num_layers * num_directions, batch, hidden_size)."""
    _cell = LSTMCell
    _lstm = True

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward",
                 time_major=False, dropout=0.0, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, proj_size=0, name=None):
        if proj_size:
            raise NotImplementedError("LSTM: proj_size is not supported")
        super().__init__(input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)


class GRU(_RNNBase):
    _cell = GRUCell

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward",
                 time_major=False, dropout=0.0, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__(input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)

