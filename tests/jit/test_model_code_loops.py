"""Recurrent and iterative model code: an LSTM over variable lengths
(`for t in range(n)`, n a tensor, with masks), a GRU whose batch and time
dims are unknown (InputSpec None), dynamic routing, a fixed-point
refinement `while` on a tensor tolerance, and Python numbers that loops
turn from ints into floats.

Found by this file (each failed before its fix):
* `s = 0` then `s += 0.5` in a tensor loop made `x * s` float64 for a
  float32 `x` (eager: float32): the loop cast the number to float64 and the
  cast lost its weak typing, so it acted as a float64 tensor.
* the same number growing on one path of a tensor `if` in a tensor loop
  raised "'s' has dtype float64 and int64 in the two branches": two Python
  numbers of different kinds now meet at their common kind, still weak.
* an early-exit encoder (`for blk in self.blocks:` appending each hidden
  state, `break` on a tensor) raised "'hiddens' holds a value computed
  inside the other branch": the trips after the break flag became a tensor
  are guarded by a `cond` each, and now carry the list as an array.
* `while (i := i + 1) <= n:` with a tensor `n` ran one trip too few (a
  silent wrong answer): the test evaluated in Python to see that it is a
  tensor kept its assignment, and the loop's condition then counted again.
"""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static
from d2s.static import InputSpec

from model_code_helpers import assert_same_run, program_ops, tensor

RNG = np.random.default_rng(5)


class VarLenLSTM(nn.Layer):
    def __init__(self, inputs=3, hidden=4):
        super().__init__()
        self.ih = nn.Linear(inputs, 4 * hidden)
        self.hh = nn.Linear(hidden, 4 * hidden)
        self.hidden = hidden

    def forward(self, xs, n, lengths):
        b, k = xs.shape[0], self.hidden
        h = d2s.zeros([b, k])
        c = d2s.zeros([b, k])
        for t in range(n):
            g = self.ih(xs[:, t]) + self.hh(h)
            i, f, u, o = g[:, :k], g[:, k:2 * k], g[:, 2 * k:3 * k], g[:, 3 * k:]
            c_new = F.sigmoid(f) * c + F.sigmoid(i) * d2s.tanh(u)
            h_new = F.sigmoid(o) * d2s.tanh(c_new)
            keep = (t < lengths).astype("float32").unsqueeze(-1)
            h = keep * h_new + (1 - keep) * h
            c = keep * c_new + (1 - keep) * c
        return h, c


@pytest.mark.parametrize("n, lengths", [(5, [5, 2]), (3, [1, 3]), (0, [0, 0])])
def test_lstm_over_variable_lengths(n, lengths):
    d2s.seed(1)
    layer = VarLenLSTM()
    xs = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    static = to_static(layer.forward)
    assert_same_run(static, layer.forward,
                    lambda: (tensor(xs, grad=True), tensor(n), tensor(lengths)),
                    grad_of=layer.parameters())
    assert "while" in program_ops(static, tensor(xs, grad=True), tensor(n), tensor(lengths))


def _gru(xs, lengths):
    batch, steps = xs.shape[0], xs.shape[1]
    h = d2s.zeros([batch, xs.shape[2]])
    for t in range(steps):
        z = F.sigmoid(xs[:, t] + h)
        h_new = (1 - z) * h + z * d2s.tanh(xs[:, t])
        keep = (lengths > t).astype("float32").unsqueeze(1)
        h = keep * h_new + (1 - keep) * h
    return h


def test_gru_with_unknown_batch_and_time_serves_every_size():
    static = to_static(_gru, input_spec=[InputSpec([None, None, 4]), InputSpec([None], "int64")])
    for batch, steps in [(2, 5), (3, 1), (1, 4)]:
        xs = RNG.standard_normal((batch, steps, 4)).astype(np.float32)
        lengths = RNG.integers(0, steps + 1, batch)
        assert_same_run(static, _gru, lambda: (tensor(xs, grad=True), tensor(lengths)))
    assert len(static.program_cache) == 1
    assert "while" in program_ops(static, tensor(xs), tensor(lengths))


def _routing(u, iterations: int = 3):
    logits = d2s.zeros([u.shape[0], 2])
    v = None
    for _ in range(iterations):
        c = F.softmax(logits, axis=-1)
        s = (c.unsqueeze(-1) * u.unsqueeze(1)).sum(axis=0)
        n2 = (s * s).sum(axis=-1, keepdim=True)
        v = n2 / (1 + n2) * s / d2s.sqrt(n2 + 1e-8)
        agreement = u @ v.transpose([1, 0])
        if agreement.abs().max() > 10:   # a tensor `if` inside an unrolled loop
            agreement = agreement / 10
        logits = logits + agreement
    return v


def test_dynamic_routing():
    u = RNG.standard_normal((4, 3)).astype(np.float32)
    static = to_static(_routing)
    for scale in (1.0, 30.0):
        assert_same_run(static, _routing, lambda: (tensor(u * scale, grad=True),))
    assert "cond" in program_ops(static, tensor(u))


def _refine(a, tol, max_steps: int = 50):
    """Newton iterations for sqrt(a) until the update is below `tol`."""
    y = a
    err = d2s.full([], 1.0)
    steps = 0
    while err > tol:
        y_new = 0.5 * (y + a / y)
        err = (y_new - y).abs().max()
        y = y_new
        steps += 1
        if steps >= max_steps:
            break
    return y, steps


@pytest.mark.parametrize("tol", [1e-1, 1e-4, 10.0])
def test_refinement_until_a_tensor_tolerance(tol):
    a0 = np.array([2.0, 9.0, 0.5], np.float32)
    static = to_static(_refine)
    assert_same_run(static, _refine, lambda: (tensor(a0, grad=True), tensor(tol)))
    assert "while" in program_ops(static, tensor(a0), tensor(tol))


def _int_grows_into_float(x, n):
    s = 0
    for _ in range(n):
        s += 0.5
    return x * s


def _int_grows_on_one_path(x, n):
    s = 0
    i = 0
    while i < n:
        if x.sum() > 0:
            s = s + 0.5
        i += 1
    return x * s, x + s


def _bool_grows_into_float(x, n):
    s = True
    for i in range(n):
        s = s + i * 1.5
    return x * s


@pytest.mark.parametrize("fn", [_int_grows_into_float, _int_grows_on_one_path,
                                _bool_grows_into_float])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_python_number_a_loop_makes_a_float_stays_weakly_typed(fn, dtype):
    x0 = np.array([1.0, -0.25], dtype)
    static = to_static(fn)
    for sign in (1.0, -1.0):
        for n in (0, 3):
            assert_same_run(static, fn, lambda: (tensor(x0 * sign, grad=True, dtype=dtype),
                                                 tensor(n)))
    assert "while" in program_ops(static, tensor(x0, dtype=dtype), tensor(3))


def _walrus_counter(x, n):
    i = 0
    while (i := i + 1) <= n:
        x = x * 1.5
    return x, i


def _walrus_after_python_trips(x, n):
    """The test is a Python bool for the first trips (k is a number), then a
    tensor once the body makes k one."""
    k = 0
    while (k := k + 1) < 3 or k <= n:
        x = x * 1.5
        if k == 2:
            k = k + n * 0
    return x, k


@pytest.mark.parametrize("fn", [_walrus_counter, _walrus_after_python_trips])
@pytest.mark.parametrize("n", [0, 1, 4])
def test_a_walrus_counter_in_a_tensor_while_test_counts_each_trip_once(fn, n):
    x0 = np.array([1.0, -2.0], np.float32)
    static = to_static(fn)
    assert_same_run(static, fn, lambda: (tensor(x0, grad=True), tensor(n)))
    assert "while" in program_ops(static, tensor(x0), tensor(n))
    assert static(1.0, n) == fn(1.0, n)


class EarlyExitEncoder(nn.Layer):
    def __init__(self, dim=3, depth=4):
        super().__init__()
        self.blocks = nn.LayerList([nn.Linear(dim, dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, threshold):
        hiddens = []
        for i, blk in enumerate(self.blocks):
            x = d2s.tanh(blk(x)) + x
            hiddens.append(self.norm(x))
            if x.abs().max() > threshold:
                break
        return x, d2s.stack(hiddens), len(hiddens)


@pytest.mark.parametrize("threshold", [0.1, 0.8, 1.5, 100.0])
def test_early_exit_encoder_collects_the_hidden_states_it_ran(threshold):
    d2s.seed(0)
    layer = EarlyExitEncoder()
    x0 = np.array([[0.3, -0.2, 0.5]], np.float32)
    static = to_static(layer.forward)
    assert_same_run(static, layer.forward, lambda: (tensor(x0, grad=True), tensor(threshold)),
                    grad_of=layer.parameters())
    assert "cond" in program_ops(static, tensor(x0, grad=True), tensor(threshold))
