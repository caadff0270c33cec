"""`x[t:t + c]` with a tensor `t` on the xla backend: a window of static size
c at a run-time start (`lax.dynamic_slice`), its gradient placed back at the
start. Before, any slice with tensor bounds ran the program on numpy ("a
slice with tensor bounds: the result's shape depends on their values").
Where numpy's slice is not the window (the start past `dim - c`, or
negative: numpy clips it or counts from the end) the call runs on numpy, so
values and shapes stay numpy's.
"""
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s.jit import to_static  # noqa: E402
from d2s.static.backend import BackendFallbackWarning  # noqa: E402

from xla_helpers import assert_same, op_types  # noqa: E402


def rnn_over_rows(x, w, h):
    """An RNN reading x one row at a time as x[t:t + 1] (keeps the row's dim)."""
    t = d2s.zeros([], "int64")
    while t < x.shape[0]:
        h = d2s.tanh(d2s.matmul(x[t:t + 1], w) + h)
        t = t + 1
    return h


def pairs_of_columns(x, w, h):
    """x[:, t:t + 2] at every second column, summed."""
    t = d2s.zeros([], "int64")
    acc = d2s.zeros([x.shape[0], 2], x.dtype)
    while t < x.shape[1] - 1:
        acc = acc + x[:, t:t + 2] * 0.5
        t = t + 2
    return acc


def window_then_row(x, w, h):
    t = (x.sum() > 0).astype("int64") + 1
    return x[t:t + 2, 1:] * 2.0 - x[t:t + 1][0, 1:]


def _inputs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(5, 4)) * 0.5, rng.normal(size=(4, 4)) * 0.5, np.zeros((1, 4))


def _run(fn, backend, x0, w0, h0):
    x = d2s.to_tensor(x0, stop_gradient=False)
    w = d2s.to_tensor(w0, stop_gradient=False)
    out = to_static(fn, backend=backend)(x, w, d2s.to_tensor(h0))
    (out * out).sum().backward()
    return [out.numpy(), x.grad.numpy(), w.grad.numpy() if w.grad is not None else np.zeros(1)]


@pytest.mark.parametrize("fn", [rnn_over_rows, pairs_of_columns, window_then_row])
def test_windows_at_run_time_starts_lower_with_numpys_values_and_gradients(strict, fn):
    args = _inputs()
    assert_same(_run(fn, "xla", *args), _run(fn, "numpy", *args))


def test_the_window_is_a_slice_of_the_lowered_program():
    x0, w0, h0 = _inputs()
    fn = to_static(rnn_over_rows, backend="xla")
    args = (d2s.to_tensor(x0), d2s.to_tensor(w0), d2s.to_tensor(h0))
    assert "while" in op_types(fn.get_concrete_program(*args).main_program)
    assert "stablehlo.dynamic_slice" in fn.lowered_text(*args)


def tail_window(x, t):
    return x[t:t + 2] * 1.0


@pytest.mark.parametrize("t", [0, 3, 4, 7, -1, -3])  # in the array, clipped, from the end
def test_a_start_where_numpys_slice_is_not_the_window_gives_numpys_values(t):
    x = d2s.to_tensor(np.arange(5.0))
    got = to_static(tail_window, backend="xla")(x, d2s.to_tensor(np.array(t)))
    want = to_static(tail_window, backend="numpy")(x, d2s.to_tensor(np.array(t)))
    assert_same([got.numpy()], [want.numpy()])


def to_the_end(x, t):
    return x[t:] * 1.0  # its size depends on t: no window


def test_a_slice_of_run_time_size_still_falls_back_with_numpys_values():
    x = d2s.to_tensor(np.arange(5.0))
    t = d2s.to_tensor(np.array(2))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", BackendFallbackWarning)
        got = to_static(to_the_end, backend="xla")(x, t)
    assert any("tensor bounds" in str(w.message) for w in seen)
    np.testing.assert_array_equal(got.numpy(), np.arange(2.0, 5.0))
