"""Converted control flow on the xla backend: the same programs run on numpy
and on xla give the same values, gradients, errors and printed text."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s import static  # noqa: E402
from d2s.jit import InputSpec, to_static  # noqa: E402
from d2s.static.backend import BackendFallbackWarning  # noqa: E402

from xla_helpers import both, op_types, program_of, run, run_xla_strict, xla_program  # noqa: E402


def _t(x, dtype=None):
    return d2s.to_tensor(np.asarray(x, dtype=dtype))


# ---- undefined names, raise, assert, print --------------------------------------------
@to_static
def _first_assigned_in_loop(n):
    i = d2s.zeros([], "int64")
    while i < n:
        y = i * 2
        i = i + 1
    return y + 1


def test_a_name_a_zero_trip_loop_never_assigned_raises_the_same_name_error():
    prog, feed, fetch = program_of(_first_assigned_in_loop, _t(0, np.int64))
    assert "undefined" in op_types(prog)
    messages = []
    for backend in ("numpy", "xla"):
        with pytest.raises(NameError) as info:
            run(backend, prog, feed, fetch)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "name 'y' is not defined" in messages[0]
    _, (got,) = both(prog, {k: np.int64(4) for k in feed}, fetch)
    assert got == 7


@to_static
def _guarded(x):
    if x.sum() > 0:
        raise ValueError("the sum must not be positive")
    assert x.min() > -10.0, "too small"
    return x * 2.0


@pytest.mark.parametrize("value, error, message", [
    (1.0, ValueError, "the sum must not be positive"), (-20.0, AssertionError, "too small")])
def test_raise_and_assert_in_a_program_raise_the_same_error_with_the_users_line(
        value, error, message):
    prog, feed, fetch = program_of(_guarded, _t([value, -0.5], np.float32))
    assert {"cond", "raise", "assert"} <= op_types(prog)
    texts = []
    for backend in ("numpy", "xla"):
        with pytest.raises(error) as info:
            run(backend, prog, feed, fetch)
        texts.append(str(info.value))
    assert texts[0] == texts[1] and message in texts[0] and "test_xla_control_flow.py" in texts[0]
    both(prog, {k: np.array([-1.0, -2.0], np.float32) for k in feed}, fetch)


@to_static
def _chatty(x, n):
    i = d2s.zeros([], "int64")
    while i < n:
        print("step", i, x * d2s.cast(i, "float32"))
        i = i + 1
    return i


def test_print_in_a_loop_prints_the_same_text_in_the_same_order(capsys):
    prog, feed, fetch = program_of(_chatty, _t([1.0, 2.0], np.float32), _t(3, np.int64))
    outs = {}
    for backend in ("numpy", "xla"):
        capsys.readouterr()
        run(backend, prog, feed, fetch)
        outs[backend] = capsys.readouterr().out
    assert outs["xla"] == outs["numpy"] and outs["numpy"].count("step") == 3


# ---- tensor arrays ----------------------------------------------------------------------
@to_static
def _collect(x, n):
    rows = []
    i = d2s.zeros([], "int64")
    while i < n:
        x = d2s.tanh(x) + 0.5
        rows.append(x)
        i = i + 1
    return d2s.stack(rows), len(rows)


@pytest.mark.parametrize("trips", [1, 5, 300])
def test_tensor_arrays_grow_past_their_first_capacity_without_truncation(trips):
    prog, feed, fetch = program_of(_collect, _t([0.1, -0.3]), _t(trips, np.int64))
    _, (stacked, length) = both(prog, feed, fetch)
    assert stacked.shape == (trips, 2) and length == trips
    assert xla_program(prog).room >= trips


# ---- gradients through loops with break and early return ---------------------------------
@to_static
def _loop_with_break(x, w):
    k = 0
    while x.sum() < 30.0:
        x = d2s.tanh(x) * w + x * 1.2
        k += 1
        if k > 500:
            break
    return (x * x).sum()


@to_static
def _early_return(x):
    for i in range(6):
        x = x * 1.5 - 0.1
        if x.sum() > 8.0:
            return x * x
    return -x


def _grad_program(fn, shapes):
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data(f"in{i}", s, "float64") for i, s in enumerate(shapes)]
        y = fn(*xs)
        loss = (y * y).sum() if len(y.shape) else y
        grads = static.gradients(loss, xs)
    return prog, [loss] + list(grads)


@pytest.mark.parametrize("scale", [0.001, 0.5, 50.0])
def test_gradients_through_a_while_with_break_equal_numpys(scale):
    prog, fetch = _grad_program(_loop_with_break, [[3], [3]])
    assert {"while", "while_grad"} <= op_types(prog)
    feed = {"in0": scale * np.array([0.1, 0.2, 0.3]), "in1": np.array([0.5, 1.0, 1.5])}
    both(prog, feed, fetch)


@pytest.mark.parametrize("start", [0.1, 0.6, 3.0])
def test_gradients_through_an_early_return_equal_numpys(start):
    prog, fetch = _grad_program(_early_return, [[2]])
    assert {"cond", "cond_grad"} <= op_types(prog)
    both(prog, {"in0": np.array([start, start / 2])}, fetch)


def test_a_long_loop_history_grows_its_room_and_keeps_every_trip():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [2], "float64")
        (h,) = static.nn.while_loop(lambda h: h.sum() < 1000.0, lambda h: [h * 1.01 + 0.01], [x])
        (gx,) = static.gradients((h * h).sum(), [x])
    _, got = both(prog, {"x": np.array([1.0, 2.0])}, [h, gx])
    assert xla_program(prog).room >= 300  # ~330 trips recorded, none dropped


def test_a_loop_value_that_grows_otherwise_falls_back_naming_it():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [1], "float64")
        (acc,) = static.nn.while_loop(lambda a: a.sum() < 20.0,
                                      lambda a: [d2s.concat([a, a * 2.0])], [x], names=["acc"])
    feed = {"x": np.array([1.0])}
    with pytest.warns(BackendFallbackWarning,
                      match=r"op 'while' at .*line \d+.*a loop variable changes shape"):
        got = run("xla", prog, feed, [acc])
    np.testing.assert_array_equal(got[0], run("numpy", prog, feed, [acc])[0])


# ---- nested conds lower once each --------------------------------------------------------
@to_static
def _guarded_trips(x):
    # a tensor `break` in a Python loop: each later trip is a cond nested in
    # the one before (12 deep here)
    for i in range(12):
        x = x * 1.1 + 0.1
        if x.sum() > 100.0:
            break
    return x


def _count_block_lowerings(monkeypatch):
    from d2s.backends.xla.lowering import Lowerer
    counts = {}
    real = Lowerer.lower_block

    def counting(self, idx, env):
        key = (id(self), idx)  # per lowering (forward and gradient are two)
        counts[key] = counts.get(key, 0) + 1
        return real(self, idx, env)
    monkeypatch.setattr(Lowerer, "lower_block", counting)
    return counts


def test_nested_conds_of_a_gradient_lower_each_block_once(monkeypatch):
    """With gradients each cond gives its branch's kept values and zeros for
    the other's. Made by tracing the other branch once more, they cost 4 **
    depth lowerings (the xla fuzz timed out on a 4-trip loop); each branch is
    traced once and lowered once."""
    counts = _count_block_lowerings(monkeypatch)
    grads = []
    for backend in ("numpy", "xla"):
        x = d2s.to_tensor(np.linspace(0.5, 2.0, 4), stop_gradient=False)
        y = to_static(_guarded_trips.dygraph_function, backend=backend)(x)
        (y * y).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)
    assert counts and max(counts.values()) == 1, counts


@to_static
def _nested_loops(x, n):
    # four tensor loops nested, each with a data-dependent exit
    i = 0
    while i < 2 and x.sum() < n:
        j = 0
        while j < 2 and x.sum() < n:
            k = 0
            while k < 2 and x.sum() < n:
                m = 0
                while m < 2 and x.sum() < n:
                    x = x * 1.05 + 0.01
                    m += 1
                k += 1
            j += 1
        i += 1
    return x


def test_nested_loops_of_a_gradient_lower_each_block_once(monkeypatch):
    """A loop needs its body's result shapes before `lax.while_loop` traces it
    (the history's buffers, the carries' settled shapes). Tracing the body
    for them and again for `lax` lowered a block nested `depth` loops deep
    2 ** depth times, and 4 ** depth with the gradient loop (the xla fuzz
    timed out on four nested loops: 24 lowerings of the innermost blocks);
    each body is now lowered once, each condition twice (the first test
    before the loop, the others at the end of each trip)."""
    counts = _count_block_lowerings(monkeypatch)
    grads = []
    for backend in ("numpy", "xla"):
        x = d2s.to_tensor(np.linspace(0.5, 2.0, 4), stop_gradient=False)
        n = d2s.to_tensor(np.array(40.0))
        y = to_static(_nested_loops.dygraph_function, backend=backend)(x, n)
        (y * y).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)
    assert counts and max(counts.values()) <= 2, counts


# ---- a name a loop assigns first, over a dim the program leaves unknown -----------------
_VECTORS = [InputSpec([None], "float64"), InputSpec([None], "float64")]


@to_static(input_spec=_VECTORS)
def _early_return_in_loop(x, y):
    for r in y:
        x = x + r * -1.5
        if x.sum() > -2.0:
            return x * -1.5 + y
        x = x * 0.5
    return x * 2.0 + y


@pytest.mark.parametrize("xs, ys", [([-1.0, -1.0], [-1.0, -1.0]),   # returns on trip 1
                                    ([-9.0, -9.0], [-2.0, -2.0]),   # returns later
                                    ([-9.0, -9.0], [0.1, 0.1]),     # never returns
                                    ([], [])])                      # no trip
def test_an_early_return_in_a_loop_over_an_unknown_dim_lowers(xs, ys):
    """Until the loop returns, the return value is the `undefined` op's
    stand-in: empty in the dims the program leaves unknown, while the
    returning branch's value is not. The branch that passes the stand-in
    through gives zeros shaped like the other branch's value (it is flagged
    undefined either way), so the cond and the loop lower (they fell back to
    numpy: the xla fuzz found it)."""
    prog, feed, fetch = program_of(_early_return_in_loop, _t([-1.0, -1.0]), _t([1.0, 1.0]))
    assert {"while", "cond"} <= op_types(prog)
    both(prog, {k: np.asarray(v, np.float64) for k, v in zip(feed, (xs, ys))}, fetch)


@to_static(input_spec=_VECTORS)
def _early_return_in_nested_loops(x, y):
    for r in y:
        for s in y:
            x = x + r * s
            if x.sum() > 3.0:
                return x * 2.0
        x = x * 0.5
    return x - 1.0


@pytest.mark.parametrize("xs, ys", [([1.0, 1.0], [0.5, 1.0]),   # returns in the inner loop
                                    ([0.0, 0.0], [0.1, 0.1]),   # never returns
                                    ([], [])])                  # no trip
def test_an_early_return_in_nested_loops_over_an_unknown_dim_lowers(xs, ys):
    """The inner loop carries the outer loop's stand-in for the return value
    (empty, maybe undefined) and its body gives a full one: the inner loop
    settles it as a loop-born name (the fuzz found it falling back), then
    the outer loop settles its own carry."""
    prog, feed, fetch = program_of(_early_return_in_nested_loops, _t([1.0, 1.0]), _t([1.0]))
    both(prog, {k: np.asarray(v, np.float64) for k, v in zip(feed, (xs, ys))}, fetch)


@to_static(input_spec=_VECTORS)
def _returns_empty_or_full(x, y):
    for r in y:
        if r > 0.0:
            return x[:0]
        if r < -1.0:
            return x * 2.0
    return x


@pytest.mark.parametrize("ys, size", [([1.0], 0), ([-0.5, 1.0], 0), ([-2.0], 2), ([-0.5], 2)])
def test_a_real_empty_value_where_a_stand_in_was_assumed_runs_on_numpy(ys, size):
    """The other way round: a branch gives a real (defined) empty value where
    the other gives a full one. XLA cannot carry both shapes, so a run whose
    value is real there is made again on numpy (never zeros shaped like the
    other's)."""
    prog, feed, fetch = program_of(_returns_empty_or_full, _t([1.0, 2.0]), _t([1.0]))
    feed = dict(zip(feed, (np.array([1.0, 2.0]), np.array(ys))))
    want, got = both(prog, feed, fetch)
    assert np.asarray(got[0]).shape == (size,)
    assert xla_program(prog) is not None  # it lowered; only such a run goes to numpy


@to_static(input_spec=[InputSpec([None], "float64"), InputSpec([], "int64")])
def _row(x, i):
    return x[i] * 2.0


def test_a_run_time_index_into_an_empty_tensor_raises_numpys_index_error():
    """XLA cannot compile `x[i]` of an empty `x` as it is; the stand-in that
    compiles sends a run that reaches it to numpy, which raises."""
    prog, feed, fetch = program_of(_row, _t([1.0, 2.0]), _t(0, np.int64))
    both(prog, dict(zip(feed, (np.array([1.0, 2.0]), np.int64(1)))), fetch)
    empty = dict(zip(feed, (np.zeros(0), np.int64(0))))
    messages = []
    for backend in ("numpy", "xla"):
        with pytest.raises(IndexError) as info:
            run_xla_strict(prog, empty, fetch) if backend == "xla" else run(backend, prog, empty, fetch)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "out of bounds" in messages[0]
