"""A Python list (or tuple) indexed by a tensor in converted code: `xs[t]`
with `t` the counter of a loop on a tensor (an RNN over a list of per-step
inputs), `ws[t]` of a list of numbers, `xs[n - 1]` with a tensor `n`. The
program picks the item when it runs (the items are stacked), with eager's
values, dtypes and gradients on numpy and xla; Python has no list item at a
Variable, so this was "cannot be used as a Python int". Items no tensor row
stands for are a ControlFlowError naming the list, the line and what to
write instead."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import ControlFlowError


def _rnn_over_steps(x, n):
    steps = [x[0], x[1], x[0] * 2]
    h = x[0] * 0
    for t in range(n):
        h = d2s.tanh(h + steps[t])
    return h


def _weights_by_counter(x, n):
    weights = [0.5, 1.5, -2.0]
    s = x[0] * 0
    t = 0
    while t < n:
        s = s + x[1] * weights[t]     # a Python float: x's dtype is kept
        t += 1
    return s


def _last_by_tensor(x, n):
    items = (x[0], x[1] * 3, x[0] - x[1])
    return items[n - 1] * items[-n]


def _fibonacci_rows(x, n):
    rows = [x[0], x[1]]
    for i in range(2, n + 2):
        rows.append(rows[i - 1] + rows[i - 2] * 0.5)   # the list the loop appends to
    return d2s.stack(rows).sum(0)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn", [_rnn_over_steps, _weights_by_counter, _last_by_tensor,
                                _fibonacci_rows])
def test_a_list_indexed_by_a_tensor_picks_the_item_at_run_time(backend, fn):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(fn, backend=backend)
    values = np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]], "float32")
    for n in (1, 3):
        xs, xe = (d2s.to_tensor(values, stop_gradient=False) for _ in range(2))
        out, ref = static(xs, d2s.to_tensor(np.array(n))), fn(xe, d2s.to_tensor(np.array(n)))
        assert out.dtype == ref.dtype and out.shape == ref.shape
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
        (out * out).sum().backward()
        (ref * ref).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)


def _layers_by_counter(x, n):
    layers = [d2s.nn.Linear(3, 3), d2s.nn.Linear(3, 3)]
    for t in range(n):
        x = layers[t](x)
    return x


_BLOCKS = d2s.nn.LayerList([d2s.nn.Linear(3, 3), d2s.nn.Linear(3, 3)])


def _layer_list_by_counter(x, n):
    for t in range(n):
        x = _BLOCKS[t](x)
    return x


def _ragged_by_counter(x, n):
    parts = [x[0], x[1, :2]]
    s = x[0, 0] * 0
    for t in range(n):
        s = s + parts[t].sum()
    return s


@pytest.mark.parametrize("fn, why", [(_layers_by_counter, "holds a Linear"),
                                     (_layer_list_by_counter, "a LayerList has no item"),
                                     (_ragged_by_counter, "different")])
def test_items_no_tensor_row_stands_for_are_a_clear_error(fn, why):
    values = np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]], "float32")
    with pytest.raises(ControlFlowError) as info:
        to_static(fn)(d2s.to_tensor(values), d2s.to_tensor(np.array(2)))
    text = str(info.value)
    assert why in text and "test_autograph_lists_indexed_by_tensors.py" in text
    assert "'layers'" in text or "'parts'" in text or "'_BLOCKS'" in text
    assert "range(len(" in text
