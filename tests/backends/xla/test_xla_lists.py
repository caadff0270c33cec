"""Lists appended to in a tensor loop or under a tensor `if`, read as model
code reads them, on the xla backend: values and gradients equal to the numpy
backend's, with fallbacks made errors (`strict`).

Before (each case here fell back to numpy, with one `BackendFallbackWarning`):
* any read other than `stack(outs)`, `concat(outs)` (axis 0), `outs[i]` or
  `len(outs)`: `stack(outs, axis=1)`, `concat(outs, axis=1)`,
  `stack(outs).mean(0)`, `stack(outs) * 2`, a linear layer over
  `stack(outs, axis=1)` ("it reads a tensor array, whose length is a
  run-time value");
* every gradient through a list appended to in a tensor `while` ("the
  gradient of a tensor array appended to in the loop changes shape on every
  trip"), and with no trip at all the backward raised IndexError while
  lowering — numpy gives zeros;
* the gradient of a list appended to under a tensor `if` whose false side
  was taken ("lowering a branch with these shapes raised IndexError").
Trip counts: none, one, several, and more than the first capacity (64).
"""
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s.jit import to_static  # noqa: E402
from d2s.static.backend import BackendFallbackWarning  # noqa: E402

from xla_helpers import assert_same  # noqa: E402

TRIPS = [0, 1, 5, 70]  # 70: past the first capacity, the run is compiled again with room


def _states(x, w, n):
    """An RNN that collects its hidden states until a data-dependent exit."""
    h = x
    hs = []
    i = 0
    while i < n:
        h = d2s.tanh(d2s.matmul(h, w)) + x * 0.5
        hs.append(h)
        i += 1
        if h.sum() > 1e6:  # never: the exit depends on the data all the same
            break
    return hs


def stack_axis_1(x, w, n):
    return d2s.stack(_states(x, w, n), axis=1)          # [batch, time, hidden]


def stack_last_axis(x, w, n):
    return d2s.stack(_states(x, w, n), axis=-1)


def concat_axis_1(x, w, n):
    return d2s.concat(_states(x, w, n), axis=1)


def sum_over_time(x, w, n):
    return d2s.stack(_states(x, w, n)).sum(0)


def mean_over_time(x, w, n):
    return d2s.stack(_states(x, w, n)).mean(0)


def scaled(x, w, n):
    return d2s.stack(_states(x, w, n)) * 2.0 - 1.0


def linear_over_time(x, w, n):
    hs = d2s.stack(_states(x, w, n), axis=1)
    return d2s.matmul(hs, w).sum(axis=-1)


def mean_loss(x, w, n):
    return d2s.stack(_states(x, w, n)).mean()          # trained on as it is


def pooled_per_step(x, w, n):
    return d2s.stack(_states(x, w, n), axis=1).sum(axis=-1) * 0.1


def weighted_by_full_like(x, w, n):
    hs = d2s.stack(_states(x, w, n))
    return hs * d2s.full_like(hs, 3.0)              # a constant shaped like the list


READS = [stack_axis_1, stack_last_axis, concat_axis_1, sum_over_time, mean_over_time, scaled,
         linear_over_time, mean_loss, pooled_per_step, weighted_by_full_like]


def _inputs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(2, 3)) * 0.5, rng.normal(size=(3, 3)) * 0.5


def _run(fn, backend, x0, w0, n, loss_inside=False):
    """(fn's result, the gradients of x and w) of `fn` converted for `backend`."""
    x = d2s.to_tensor(x0, stop_gradient=False)
    w = d2s.to_tensor(w0, stop_gradient=False)
    with np.errstate(all="ignore"):
        if loss_inside:
            out = to_static(lambda x, w, n: (fn(x, w, n) ** 2).sum(), backend=backend)(
                x, w, d2s.to_tensor(np.array(n)))
            out.backward()
        else:
            out = to_static(fn, backend=backend)(x, w, d2s.to_tensor(np.array(n)))
            (out * out).mean().backward()
    return [out.numpy(), x.grad.numpy(), w.grad.numpy()]


@pytest.mark.parametrize("n", TRIPS)
@pytest.mark.parametrize("fn", READS)
def test_lists_read_by_ordinary_ops_lower_with_numpys_values_and_gradients(strict, fn, n):
    x0, w0 = _inputs()
    want = _run(fn, "numpy", x0, w0, n)
    assert_same(_run(fn, "xla", x0, w0, n), want)


@pytest.mark.parametrize("n", [0, 3, 70])
@pytest.mark.parametrize("fn", [stack_axis_1, mean_over_time, linear_over_time])
def test_a_loss_computed_in_the_program_from_a_list_has_numpys_gradients(strict, fn, n):
    x0, w0 = _inputs()
    want = _run(fn, "numpy", x0, w0, n, loss_inside=True)
    assert_same(_run(fn, "xla", x0, w0, n, loss_inside=True), want)


def max_over_time(x, w, n):
    return d2s.stack(_states(x, w, n)).max(0)


@pytest.mark.parametrize("n", [1, 5])
def test_the_max_over_a_list_lowers(strict, n):
    x0, w0 = _inputs()
    assert_same(_run(max_over_time, "xla", x0, w0, n), _run(max_over_time, "numpy", x0, w0, n))


def _same_error_on_both(fn, error):
    """`fn` of an empty list raises `error` with the same message on both backends."""
    x0, w0 = _inputs()
    errors = []
    for backend in ("numpy", "xla"):
        with pytest.raises(error) as info:
            to_static(fn, backend=backend)(
                d2s.to_tensor(x0), d2s.to_tensor(w0), d2s.to_tensor(np.array(0)))
        errors.append(str(info.value))
    assert errors[1] == errors[0]


def test_the_max_over_an_empty_list_raises_numpys_error():
    _same_error_on_both(max_over_time, ValueError)


# ---- a training step -------------------------------------------------------------------
class _RNN(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.cell = d2s.nn.Linear(3, 3)
        self.head = d2s.nn.Linear(3, 1)

    def forward(self, x, limit):
        h = x
        hs = []
        while h.abs().sum() < limit:  # as long as the data says
            h = d2s.tanh(self.cell(h)) + h * 1.5
            hs.append(h)
        return self.head(d2s.stack(hs, axis=1)).mean()


# no trip (a zero gradient), several, more than the first capacity (64)
@pytest.mark.parametrize("limit", [0.0, 30.0, 1e20])
def test_an_rnn_trained_on_its_collected_states_steps_as_on_numpy(strict, limit):
    results = {}
    for backend in ("numpy", "xla"):
        d2s.seed(0)
        model = _RNN()
        opt = d2s.optimizer.SGD(learning_rate=0.05, parameters=model.parameters())

        def step(x, limit):
            loss = model(x, limit)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        step = to_static(step, backend=backend)
        x = d2s.to_tensor(np.array([[0.5, -1.0, 0.25], [1.0, 0.5, -0.5]], np.float32))
        with np.errstate(all="ignore"):
            losses = [step(x, d2s.to_tensor(np.float32(limit))).numpy() for _ in range(3)]
        results[backend] = losses + [p.numpy() for p in model.parameters()]
    assert_same(results["xla"], results["numpy"])


# ---- under a tensor `if` ---------------------------------------------------------------
def _maybe_doubled(x, w, n):
    outs = [x]
    if x.sum() > n:
        outs.append(d2s.tanh(d2s.matmul(x, w)))
    return outs


def if_stack(x, w, n):
    return d2s.stack(_maybe_doubled(x, w, n))


def if_stack_axis_1(x, w, n):
    return d2s.stack(_maybe_doubled(x, w, n), axis=1)


def if_mean(x, w, n):
    return d2s.stack(_maybe_doubled(x, w, n)).mean(0)


@pytest.mark.parametrize("n", [-100, 100])  # the `if` taken, and not
@pytest.mark.parametrize("fn", [if_stack, if_stack_axis_1, if_mean])
def test_lists_appended_under_a_tensor_if_have_numpys_gradients(strict, fn, n):
    x0, w0 = _inputs()
    assert_same(_run(fn, "xla", x0, w0, n), _run(fn, "numpy", x0, w0, n))


# ---- slices, the last entry, softmax and argmax over a list ------------------------------
def tail(x, w, n):
    return d2s.stack(_states(x, w, n))[1:]          # all but the first state


def last_two(x, w, n):
    return d2s.stack(_states(x, w, n))[-2:]


def middle(x, w, n):
    return d2s.stack(_states(x, w, n))[1:-1]


def last_state(x, w, n):
    return _states(x, w, n)[-1]


def attention_over_time(x, w, n):
    """Softmax over the collected states' time axis (an attention's weights)."""
    hs = d2s.stack(_states(x, w, n), axis=1)                   # [batch, time, hidden]
    scores = F.softmax(hs.sum(axis=-1, keepdim=True), axis=1)  # [batch, time, 1]
    return (scores * hs).sum(axis=1)


def log_probs_per_state(x, w, n):
    return F.log_softmax(d2s.stack(_states(x, w, n)), axis=-1)


SLICES_AND_NORMALIZERS = [tail, last_two, middle, attention_over_time, log_probs_per_state]


@pytest.mark.parametrize("n", [1, 2, 5, 70])
@pytest.mark.parametrize("fn", SLICES_AND_NORMALIZERS + [last_state])
def test_slices_and_softmax_of_a_list_lower_with_numpys_values_and_gradients(strict, fn, n):
    x0, w0 = _inputs()
    assert_same(_run(fn, "xla", x0, w0, n), _run(fn, "numpy", x0, w0, n))


@pytest.mark.parametrize("fn", SLICES_AND_NORMALIZERS)
def test_slices_and_softmax_of_an_empty_list_are_numpys(fn):
    """No trip: an empty slice, or numpy's error for the softmax of nothing."""
    x0, w0 = _inputs()
    results = []
    for backend in ("numpy", "xla"):
        try:
            results.append(_run(fn, backend, x0, w0, 0))
        except ValueError as e:
            results.append(str(e))
    if isinstance(results[0], str):
        assert results[1] == results[0]
    else:
        assert_same(results[1], results[0])


def test_the_last_entry_of_an_empty_list_raises_numpys_index_error():
    """XLA clamps a run-time row index; the list's length is known: the run
    goes to numpy, which raises."""
    _same_error_on_both(last_state, IndexError)


def most_active_step(x, w, n):
    return d2s.argmax(d2s.stack(_states(x, w, n)).sum(axis=-1), axis=0)   # [batch]


def most_active_unit(x, w, n):
    return d2s.argmax(d2s.stack(_states(x, w, n)), axis=-1)               # [time, batch]


def most_active_entry(x, w, n):
    return d2s.argmax(d2s.stack(_states(x, w, n)))                        # flat index


@pytest.mark.parametrize("n", [1, 5, 70])
@pytest.mark.parametrize("fn", [most_active_step, most_active_unit, most_active_entry])
def test_argmax_over_a_list_lowers_with_numpys_indices(strict, fn, n):
    x0, w0 = _inputs()
    args = (d2s.to_tensor(x0), d2s.to_tensor(w0), d2s.to_tensor(np.array(n)))
    got = to_static(fn, backend="xla")(*args).numpy()
    want = to_static(fn, backend="numpy")(*args).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_the_slice_and_argmax_of_a_list_are_xla_ops():
    """They lower (no numpy fallback): the lowered module holds the while loop
    and the masked argmax's reduction."""
    x0, w0 = _inputs()
    fn = to_static(most_active_step, backend="xla")
    args = (d2s.to_tensor(x0), d2s.to_tensor(w0), d2s.to_tensor(np.array(3)))
    text = fn.lowered_text(*args)
    assert "stablehlo.while" in text and "stablehlo.reduce" in text


# ---- a list read several times: its cotangents add up ----------------------------------
def summed_and_last(x, w, n):
    hs = _states(x, w, n)
    return d2s.stack(hs).sum(0) + hs[-1]


def first_minus_last(x, w, n):
    hs = _states(x, w, n)
    return hs[0] - hs[-1]


def read_in_either_branch(x, w, n):
    hs = _states(x, w, n)
    if x.sum() > 0:
        y = d2s.stack(hs).sum(0)
    else:
        y = hs[-1] * 2.0
    return y


@pytest.mark.parametrize("sign", [1.0, -1.0])  # either branch
@pytest.mark.parametrize("n", [1, 5, 70])
@pytest.mark.parametrize("fn", [summed_and_last, first_minus_last, read_in_either_branch])
def test_a_list_read_several_times_has_numpys_gradients(strict, fn, n, sign):
    x0, w0 = _inputs()
    assert_same(_run(fn, "xla", sign * x0, w0, n), _run(fn, "numpy", sign * x0, w0, n))


# ---- a list walked by a second loop, and max/min of a list ------------------------------
def walked_by_a_for(x, w, n):
    """`for h in hs`: a second tensor loop reading the list row by row (its
    cotangent summed over that loop's trips as a tensor array)."""
    acc = x * 0.0
    for h in _states(x, w, n):
        acc = acc * 0.5 + h
    return acc


def walked_in_reverse(x, w, n):
    acc = x * 0.0
    for h in reversed(_states(x, w, n)):             # outs[::-1]
        acc = acc * 0.5 + h
    return acc


def _scores(x, w, n):
    scores, i = [], 0
    while i < n:
        scores.append((d2s.tanh(d2s.matmul(x, w)) * (i - 1.5)).sum())
        i += 1
    return scores


def best_and_worst(x, w, n):
    scores = _scores(x, w, n)
    return (max(scores) - min(scores)) * x     # the builtins pick rows of the list


@pytest.mark.parametrize("n", [1, 5, 70])
@pytest.mark.parametrize("fn", [walked_by_a_for, walked_in_reverse, best_and_worst])
def test_a_list_read_row_by_row_lowers_with_numpys_values_and_gradients(strict, fn, n):
    """Before: the gradient of `for h in hs` crashed while lowering (zeros_like
    of a tensor array); max/min of a list fell back (a gather of it)."""
    x0, w0 = _inputs()
    assert_same(_run(fn, "xla", x0, w0, n), _run(fn, "numpy", x0, w0, n))


# ---- a cross entropy over the steps of a loop ------------------------------------------
def _labels(x, n):
    labels, i = [], 0
    while i < n:
        labels.append((d2s.argmax(x, axis=-1) + i) % 3)
        i += 1
    return labels


def loss_on_given_labels(x, w, n, y):
    """Logits collected per step, labels given: `y` fixes the length."""
    return F.cross_entropy(d2s.stack(_states(x, w, n)).reshape([-1, 3]), y)


def loss_on_collected_labels(x, w, n, y):
    """Logits and labels both collected in loops: a mean over run-time rows."""
    logits = d2s.stack(_states(x, w, n)).reshape([-1, 3])
    return F.cross_entropy(logits, d2s.stack(_labels(x, n)).reshape([-1]))


def _run_loss(fn, backend, n):
    x0, w0 = _inputs()
    x = d2s.to_tensor(x0, stop_gradient=False)
    w = d2s.to_tensor(w0, stop_gradient=False)
    y = d2s.to_tensor((np.arange(2 * n) % 3).astype(np.int64))
    with np.errstate(all="ignore"):
        loss = to_static(fn, backend=backend)(x, w, d2s.to_tensor(np.array(n)), y)
        loss.backward()
    return [loss.numpy(), x.grad.numpy(), w.grad.numpy()]


@pytest.mark.parametrize("n", [0, 1, 5, 70])
@pytest.mark.parametrize("fn", [loss_on_given_labels, loss_on_collected_labels])
def test_a_cross_entropy_over_a_list_lowers_with_numpys_loss_and_gradients(strict, fn, n):
    assert_same(_run_loss(fn, "xla", n), _run_loss(fn, "numpy", n))


# ---- what still falls back -------------------------------------------------------------
def stacked_then_concatenated(x, w, n):
    return d2s.concat([d2s.stack(_states(x, w, n)), x[None]])  # its length plus one


def test_a_list_concatenated_with_another_value_still_falls_back_with_numpys_value():
    x0, w0 = _inputs()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", BackendFallbackWarning)
        got = _run(stacked_then_concatenated, "xla", x0, w0, 4)
    assert any(issubclass(w.category, BackendFallbackWarning) for w in seen)
    assert_same(got, _run(stacked_then_concatenated, "numpy", x0, w0, 4))
