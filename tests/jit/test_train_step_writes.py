"""Writes of a traced training step: transactional (a call that raises changes
nothing) and, on the compiled executor, in place and fused when nothing after
the first update can raise (d2s.backends.numpy.update_plan); otherwise computed first and
committed after the run. Both paths are tested for both properties."""
import contextlib
import weakref

import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s.jit import InputSpec
from d2s.static.executor import executor_mode

from train_step_helpers import (batch, both_modes, eager_mode, make, outputs, same, snapshot,
                                standard_step)

# In-place update plans are the numpy backend's compiled executor's (xla
# computes new values and the run writes them back).
NUMPY_PLANS = executor_mode() == "compiled" and d2s.jit.get_backend() == "numpy"
compiled_only = pytest.mark.skipif(not NUMPY_PLANS,
                                   reason="in-place updates are a compiled-executor plan")


def plan_of(step, *args):
    """'in_place' or 'commit': the compiled plan the step's program runs with."""
    program = step.get_concrete_program(*args)
    return "in_place" if program.executable("numpy").plan().in_place else "commit"


def trained(kind="sgd", steps=3, check_finite=False, make_step=standard_step):
    """A model and optimizer after a few static steps (Adam state exists)."""
    model, opt = make(kind=kind)
    step = d2s.jit.to_static(make_step(model, opt), check_finite=check_finite)
    for i in range(steps):
        step(*batch(i))
    return model, opt, step


# ---- transactional ------------------------------------------------------------------------------
def test_bad_input_changes_nothing():
    model, opt = make(kind="adam")
    step = d2s.jit.to_static(standard_step(model, opt),
                             input_spec=[InputSpec([None, 6]), InputSpec([None], "int64")])
    step(*batch(0))
    before = snapshot(model, opt)
    x, y = batch(1)
    with pytest.raises(ValueError, match="argument 'x'"):
        step(d2s.to_tensor(x.numpy().astype("float64")), y)
    with pytest.raises(ValueError, match="argument 'x'"):
        step(d2s.to_tensor(np.ones((3, 5), "float32")), y)
    assert same(snapshot(model, opt), before)


def _assert_before_update(model, opt):
    def step(x, y, limit):
        loss = F.cross_entropy(model(x), y)
        assert loss < limit, "loss diverged"           # a run-time check, before the updates
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    return step


def _assert_after_update(model, opt):
    def step(x, y, limit):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        assert loss < limit, "loss diverged"           # checked after the updates
        return loss
    return step


def _raise_in_branch(model, opt):
    def step(x, y, limit):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if loss > limit:
            raise ValueError("loss diverged")
        opt.step()
        opt.clear_grad()
        return loss
    return step


def _labels_checked_after_update(model, opt):
    """A kernel's own check after the updates: the loss on a second batch
    (cross-entropy raises on labels out of range)."""
    def step(x, y, limit):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        after = F.cross_entropy(model(x), (y * 0 + 1) * d2s.cast(limit, "int64"))
        return loss, after
    return step


def _index_checked_after_update(model, opt):
    """A tensor index read after the updates (out of range raises IndexError)."""
    def step(x, y, limit):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss, model(x)[d2s.cast(limit, "int64")]
    return step


# (limit, passing limit, failing limit): the check sees `limit`
_KERNEL_LIMITS = {_labels_checked_after_update: (2.0, 1e4), _index_checked_after_update: (1.0, 1e4)}


@pytest.mark.parametrize("make_step, error, plan", [
    (_assert_before_update, AssertionError, "in_place"),
    (_raise_in_branch, ValueError, "in_place"),
    (_assert_after_update, AssertionError, "commit"),
    (_labels_checked_after_update, ValueError, "commit"),
    (_index_checked_after_update, IndexError, "commit"),
])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_a_run_time_check_that_fails_changes_nothing(make_step, error, plan, kind):
    if make_step is _index_checked_after_update and d2s.jit.get_backend() == "xla":
        pytest.skip("XLA clamps an index out of range (the README's backend table)")
    model, opt = make(kind=kind)
    step = d2s.jit.to_static(make_step(model, opt))
    x, y = batch(0)
    passing, failing = _KERNEL_LIMITS.get(make_step, (100.0, 0.0))
    step(x, y, d2s.to_tensor(passing))                 # passes: trains
    before = snapshot(model, opt)
    with pytest.raises(error, match=None if make_step in _KERNEL_LIMITS else "loss diverged"):
        step(x, y, d2s.to_tensor(failing))             # same program, the check fails
    assert same(snapshot(model, opt), before)
    assert len(step.program_cache) == 1
    if NUMPY_PLANS:
        assert plan_of(step, x, y, d2s.to_tensor(failing)) == plan
    # eager mode agrees on what the failing call leaves behind where its check
    # comes before any eager write (eager is not transactional: after a
    # backward, its failing call leaves the gradients behind)
    if make_step is _assert_before_update:
        eager_model, eager_opt = make(kind=kind)
        eager_step = d2s.jit.to_static(make_step(eager_model, eager_opt))
        with eager_mode():
            eager_step(x, y, d2s.to_tensor(100.0))
            with pytest.raises(error):
                eager_step(x, y, d2s.to_tensor(0.0))
        assert same(snapshot(eager_model, eager_opt), before)


def test_check_finite_refuses_a_nan_step_and_changes_nothing():
    model, opt, step = trained("adam", check_finite=True)
    before = snapshot(model, opt)
    x, y = batch(0)
    bad = x.numpy().copy()
    bad[0, 0] = np.nan
    with pytest.raises(FloatingPointError, match="NaN.*changed no parameter"):
        step(d2s.to_tensor(bad), y)
    assert same(snapshot(model, opt), before)
    step(x, y)                                          # a finite step goes through
    assert not same(snapshot(model, opt), before)
    if executor_mode() == "compiled":
        assert plan_of(step, x, y) == "commit"


@pytest.mark.skipif(d2s.jit.get_backend() != "numpy",
                    reason="np.errstate governs numpy's kernels (XLA computes inf as IEEE does)")
def test_numpy_told_to_raise_uses_the_commit_plan():
    model, opt, step = trained("sgd")
    before = snapshot(model, opt)
    x, y = batch(0)
    huge = d2s.to_tensor(np.full((16, 6), 3e38, "float32"))
    with np.errstate(over="raise", invalid="raise"):
        if NUMPY_PLANS:
            assert plan_of(step, x, y) == "commit"
        with pytest.raises(FloatingPointError):
            step(huge, y)
    assert same(snapshot(model, opt), before)


def test_a_failed_trace_changes_nothing():
    model, opt = make(kind="adam")

    @d2s.jit.to_static
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        raise KeyError("boom")

    before = snapshot(model, opt)
    with pytest.raises(KeyError):
        step(*batch(0))
    assert same(snapshot(model, opt), before)
    assert opt._state == {}                             # no Adam state left behind
    assert all(p.grad is None for p in model.parameters())


# ---- in place -------------------------------------------------------------------------------
@compiled_only
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_updates_are_in_place_and_fused(kind):
    model, opt, step = trained(kind)
    x, y = batch(0)
    assert plan_of(step, x, y) == "in_place"
    arrays = [weakref.ref(p._value) for p in model.parameters()]
    arrays += [weakref.ref(t._value) for _, ts in opt._state.values() for t in ts]
    step(x, y)
    assert all(r() is not None for r in arrays)         # the same arrays, written in place
    assert [r() for r in arrays[:4]] == [p._value for p in model.parameters()]
    program = step.get_concrete_program(x, y)
    source = program.executable("numpy").plan().compiled.source
    lines = source.splitlines()
    # fused: the last layer's update runs before the first layer's gradient exists
    first_update = next(i for i, ln in enumerate(lines) if "_update(" in ln)
    assert first_update < max(i for i, ln in enumerate(lines) if "matmul(" in ln)
    assert "out=(" in source


@compiled_only
def test_cross_entropy_gradient_is_computed_in_the_probabilities_array():
    """The softmax probabilities cross_entropy keeps for its gradient are dead once
    the gradient is made: it is computed in their array (no copy), as
    hand-written numpy does; the step still equals eager bit for bit."""
    model, opt, step = trained("sgd")
    x, y = batch(0)
    source = step.get_concrete_program(x, y).executable("numpy").plan().compiled.source
    line = next(ln for ln in source.splitlines() if "k_cross_entropy(" in ln)
    probs = line.split("=")[0].split(",")[1].strip()
    assert "k_cross_entropy_grad(" in source and f", out={probs})" in source
    ref_model, ref_opt, ref_step = trained("sgd")
    for k in range(3):
        xb, yb = batch(k)
        got = step(xb, yb)
        with eager_mode():
            want = ref_step(xb, yb)
        assert np.array_equal(got.numpy(), want.numpy())
    assert same(snapshot(model, opt), snapshot(ref_model, ref_opt))


@compiled_only
def test_a_gradient_read_after_the_update_is_not_used_as_scratch():
    """SGD computes `lr * grad` in the gradient's array only when nothing reads
    the gradient afterwards; kept on `.grad` (no clear_grad) it stays intact."""
    def make_step(model, opt):
        def step(x, y):
            F.cross_entropy(model(x), y).backward()
            opt.step()
            return model.fc2.weight.grad * 1.0          # read after the update, too
        return step

    (eager, static), step = both_modes(
        make_step, lambda step, *_: [outputs(step(*batch(i))) for i in range(3)])
    assert same(eager, static)
    source = step.get_concrete_program(*batch(0)).executable("numpy").plan().compiled.source
    assert "grad_is_dead" not in source

    (eager, static), step = both_modes(
        standard_step, lambda step, *_: [outputs(step(*batch(i))) for i in range(3)])
    assert same(eager, static)
    assert "grad_is_dead=True" in step.get_concrete_program(*batch(0)).executable("numpy").plan().compiled.source


@compiled_only
def test_an_array_held_elsewhere_is_not_written():
    """Eager mode rebinds arrays: one the user holds keeps the old values. The
    step copies such an array before writing in place."""
    reference = []
    for static in (False, True):
        model, opt = make(kind="adam")
        step = d2s.jit.to_static(standard_step(model, opt))
        step(*batch(0))
        held = model.fc1.weight.numpy()                 # no copy: the parameter's array
        held_before = held.copy()
        detached = model.fc2.weight.detach()
        with (eager_mode() if not static else contextlib.nullcontext()):
            step(*batch(1))
        assert np.array_equal(held, held_before)
        assert not np.array_equal(model.fc1.weight.numpy(), held_before)
        reference.append((snapshot(model, opt), detached.numpy().copy()))
    assert same(reference[0], reference[1])


@compiled_only
def test_an_output_aliasing_a_parameter_keeps_the_old_value():
    def make_step(model, opt):
        def step(x, y):
            w_t = model.fc2.weight.T                    # a view of the weight
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss, w_t
        return step

    (eager, static), _ = both_modes(make_step,
                                    lambda step, *_: [outputs(step(*batch(i))) for i in range(3)])
    assert same(eager, static)


# ---- what each call reads anew ----------------------------------------------------------------
def test_eager_writes_between_calls_are_read_by_the_next_call():
    """A call binds nothing of eager state beyond its program: parameters and
    optimizer state updated by an eager step, the gradients it leaves, an
    array made read-only all reach the next call, as the next eager step."""
    def drive(step, model, opt):
        losses = [outputs(step(*batch(0)))]
        x, y = batch(2)
        F.cross_entropy(model(x), y).backward()         # eager: gradients held ...
        opt.step()                                      # ... and an eager update
        losses.append(outputs(step(*batch(1))))
        model.fc2.bias.numpy().setflags(write=False)    # not ours to write in place
        losses.append(outputs(step(*batch(0))))
        return losses

    (eager, static), _ = both_modes(standard_step, drive, kind="adam")
    assert same(eager, static)


def test_a_step_that_cannot_be_compiled_runs_on_the_interpreter(monkeypatch):
    from d2s.backends.numpy import step as numpy_step
    from d2s.backends.numpy.codegen import NotCompilable

    def refuse(view, name):
        raise NotCompilable("no generated code for this test")
    monkeypatch.setattr(numpy_step, "CompiledFunction", refuse)
    (eager, static), step = both_modes(
        standard_step, lambda step, *_: [outputs(step(*batch(i))) for i in range(3)])
    assert same(eager, static)
    if d2s.jit.get_backend() == "numpy":
        plan = step.get_concrete_program(*batch(0)).executable("numpy").plan()
        assert (plan.compiled, plan.in_place) == (None, ())
