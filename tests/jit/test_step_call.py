"""The generated per-call function of a training step (jit.step_call): cache
hits call it, and every change of eager state between calls that its guard
watches sends the call to the general path, which decides as it always did.
Each scenario compares with eager mode (or checks what eager leaves) on calls
made *after* the generated function exists: the first call takes the general
path and makes it."""
import contextlib

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import optimizer
from d2s.jit.train_step import StepProgram
from d2s.static.executor import executor_mode, set_executor_mode

from train_step_helpers import (MLP, accumulating_step, batch, both_modes, eager_mode, make,
                                outputs, same, snapshot, standard_step)

GENERATED = executor_mode() == "compiled" or d2s.jit.get_backend() != "numpy"


def program_of(step, *args):
    return step.get_concrete_program(*args)


@pytest.fixture
def general_calls(monkeypatch):
    """How many calls took StepProgram's general path (counted from the first
    call on: the generated function binds the general path when it is made)."""
    calls = []
    general = StepProgram.__call__

    def counted(self, tensors, backend="numpy"):
        calls.append(backend)
        return general(self, tensors, backend)
    monkeypatch.setattr(StepProgram, "__call__", counted)
    return calls


def test_cache_hits_call_the_generated_function(general_calls):
    model, opt = make()
    step = d2s.jit.to_static(standard_step(model, opt))
    losses = [outputs(step(*batch(i))) for i in range(6)]
    if GENERATED:
        assert len(general_calls) == 1                  # the first call made it
        source = program_of(step, *batch(0)).step_call_source(d2s.jit.get_backend())
        assert source.startswith("def train_step_call_")
        assert "_general(tensors" in source             # its way back to the general path
    eager_model, eager_opt = make()
    eager_step = d2s.jit.to_static(standard_step(eager_model, eager_opt))
    with eager_mode():
        eager_losses = [outputs(eager_step(*batch(i))) for i in range(6)]
    assert same(losses, eager_losses)
    assert same(snapshot(model, opt), snapshot(eager_model, eager_opt))


def test_a_frozen_parameter_leaves_the_generated_function(general_calls):
    def drive(step, model, opt):
        losses = []
        for i in range(5):
            model.fc2.bias.stop_gradient = i in (2, 3)
            losses.append(outputs(step(*batch(i))))
        return losses

    (eager, static), _ = both_modes(standard_step, drive, kind="adam")
    assert same(eager, static)
    if GENERATED:  # the first call, then the frozen ones (traced, then run)
        assert len(general_calls) == 3


def test_gradients_held_before_each_call_are_accumulated_then_cleared():
    """Eager gradients left before every call: the program traced for that
    state adds to them, and its clear_grad clears every one, on each call."""
    def drive(step, model, opt):
        losses = []
        for i in range(4):
            x, y = batch(i + 1)
            F.cross_entropy(model(x), y).backward()     # eager: gradients held
            losses.append(outputs(step(*batch(i))))
            assert all(p.grad is None for p in model.parameters())
        return losses

    (eager, static), step = both_modes(standard_step, drive, kind="adam")
    assert same(eager, static)
    assert len(step.get_concrete_program(*batch(0)).variants) == 1


def test_an_arguments_gradient_is_guarded_and_accumulated():
    """A tensor argument the step differentiates: whether its `.grad` is held
    is part of the guard (the program for None sets it, the one for a held
    gradient adds to it), as eager accumulates."""
    def make_step(model, opt):
        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return step

    def drive(step, model, opt):
        x = d2s.to_tensor(batch(0)[0].numpy(), stop_gradient=False)
        y = batch(0)[1]
        grads = []
        for _ in range(4):
            outputs(step(x, y))
            grads.append(x.grad.numpy().copy())
        return grads

    (eager, static), _ = both_modes(make_step, drive)
    assert same(eager, static)


def test_numpy_told_to_raise_after_the_function_exists_takes_the_commit_plan():
    """Under np.errstate(...="raise") a kernel may raise in the middle of the
    updates: such a call runs the plan that commits after the run, although
    the generated function (for the in-place plan) exists."""
    model, opt = make()
    step = d2s.jit.to_static(standard_step(model, opt))
    losses = [outputs(step(*batch(i))) for i in range(2)]
    program = program_of(step, *batch(0))
    assert "commit" not in program.executable("numpy")._plans
    with np.errstate(over="raise"):
        losses.append(outputs(step(*batch(2))))
    if d2s.jit.get_backend() == "numpy" and executor_mode() == "compiled":
        assert "commit" in program.executable("numpy")._plans
    eager_model, eager_opt = make()
    with eager_mode():
        eager_step = standard_step(eager_model, eager_opt)
        eager = [outputs(eager_step(*batch(i))) for i in range(3)]
    assert same(losses, eager)
    assert same(snapshot(model, opt), snapshot(eager_model, eager_opt))


def test_switching_to_the_interpreter_after_the_function_exists():
    model, opt = make()
    step = d2s.jit.to_static(standard_step(model, opt))
    step(*batch(0))
    program = program_of(step, *batch(0))
    mode = executor_mode()
    set_executor_mode("interpreter")
    try:
        losses = [outputs(step(*batch(i))) for i in range(1, 3)]
    finally:
        set_executor_mode(mode)
    if d2s.jit.get_backend() == "numpy":
        assert "interpret" in program.executable("numpy")._plans            # the call ran on the interpreter
    eager_model, eager_opt = make()
    with eager_mode():
        eager_step = standard_step(eager_model, eager_opt)
        eager = [outputs(eager_step(*batch(i))) for i in range(3)][1:]
    assert same(losses, eager)


class Trainer(nn.Layer):
    """A step as a method of a layer: the program reads the layer's tensors by
    attribute, so a replaced attribute is seen on the next call."""

    def __init__(self):
        super().__init__()
        self.net = MLP()
        self.opt = optimizer.SGD(learning_rate=0.1, parameters=self.net.parameters())

    @d2s.jit.to_static
    def train_step(self, x, y):
        loss = F.cross_entropy(self.net(x), y)
        loss.backward()
        self.opt.step()
        self.opt.clear_grad()
        return loss


def test_a_layer_attribute_replaced_after_the_function_exists():
    results = []
    for static in (False, True):
        d2s.seed(0)
        trainer = Trainer()
        with (eager_mode() if not static else contextlib.nullcontext()):
            losses = [outputs(trainer.train_step(*batch(i))) for i in range(2)]
            trainer.net.fc1.weight = d2s.to_tensor(trainer.net.fc1.weight.numpy() * 0.5,
                                                   stop_gradient=False)
            losses += [outputs(trainer.train_step(*batch(i))) for i in range(2, 5)]
        results.append((losses, [p.numpy().copy() for p in trainer.net.parameters()],
                        trainer.net.fc1.weight.grad.numpy().copy()))
    assert same(results[0], results[1])


def _assert_step(model, opt):
    def step(x, y, limit):
        loss = F.cross_entropy(model(x), y)
        assert loss < limit, "loss diverged"            # the failing line
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    return step


def test_a_run_time_error_names_the_users_line_and_changes_nothing():
    model, opt = make(kind="adam")
    step = d2s.jit.to_static(_assert_step(model, opt))
    x, y = batch(0)
    step(x, y, d2s.to_tensor(100.0))
    step(x, y, d2s.to_tensor(100.0))                    # the generated function runs
    before = snapshot(model, opt)
    with pytest.raises(AssertionError, match="loss diverged") as info:
        step(x, y, d2s.to_tensor(0.0))
    assert same(snapshot(model, opt), before)
    assert "test_step_call.py" in str(info.value)
    assert 'assert loss < limit, "loss diverged"' in str(info.value)


def _hold_grads(model, dtype):
    """What eager code may leave between calls: every gradient held, in `dtype`."""
    for p in model.parameters():
        p.grad = d2s.to_tensor(np.full(p.shape, 0.25).astype(dtype))


def test_a_held_gradient_of_another_dtype_leaves_the_generated_function(general_calls):
    """The function is made for the first program, traced with float32
    gradients held; held as float64 later, a call must take the general path
    (another program: eager adds onto the float64 gradient, keeping it)."""
    def drive(step, model):
        _hold_grads(model, "float32")
        losses = [outputs(step(*batch(i))) for i in range(2)]
        _hold_grads(model, "float64")
        losses += [outputs(step(*batch(i))) for i in range(2, 4)]
        return losses, [p.grad.dtype for p in model.parameters()]

    model, opt = make(kind="sgd")
    step = d2s.jit.to_static(accumulating_step(model, opt))
    got, dtypes = drive(step, model)
    if GENERATED:
        assert len(general_calls) == 3   # the first call, then both float64 calls
        assert len(program_of(step, *batch(0)).variants) == 2
    eager_model, eager_opt = make(kind="sgd")
    with eager_mode():
        want, want_dtypes = drive(accumulating_step(eager_model, eager_opt), eager_model)
    assert dtypes == want_dtypes == [np.dtype("float64")] * len(dtypes)
    assert _float32_close(got, want)
    assert _float32_close(snapshot(model, opt), snapshot(eager_model, eager_opt))


def _float32_close(a, b):
    """`same`, but on xla to float32's tolerance even for values held as
    float64: the step computes them in its parameters' float32 (as eager
    does), XLA rounding otherwise."""
    if d2s.jit.get_backend() == "numpy":
        return same(a, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_float32_close(x, y) for x, y in zip(a, b))
    if a is None or b is None or isinstance(a, float):
        return a == b
    a, b = np.asarray(a), np.asarray(b)
    scale = float(np.abs(b).max()) if b.size else 0.0
    return a.dtype == b.dtype and np.allclose(a, b, rtol=1e-5, atol=1e-5 * scale)
