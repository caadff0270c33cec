"""A whole training step on xla donates the buffers of the values it replaces
(issue 10 item 4): each parameter's and optimizer state's new value is
computed into the old one's memory, the eager objects see exactly what the
step left (equal to eager within the xla tolerance), an array someone holds
keeps its value, and a run that raises commits nothing."""
import weakref

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s.backends.xla import params as device_params  # noqa: E402
from d2s.backends.xla import program as xla_program  # noqa: E402
from d2s.core.tensor import is_resident  # noqa: E402
from d2s.jit import to_static  # noqa: E402

import sys, pathlib  # noqa: E402,E401
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "jit"))
from train_step_helpers import (MLP, accumulating_step, batch, eager_mode, make,  # noqa: E402
                                same, snapshot, standard_step)
from xla_helpers import bitwise, state_tensors  # noqa: E402


@pytest.fixture(autouse=True)
def on_xla():
    saved = d2s.jit.get_backend()
    d2s.jit.set_backend("xla")
    yield
    d2s.jit.set_backend(saved)


def _device_array(t):
    """The device array a Tensor's value lives in: its own while it is
    device-resident (a step's write-back), else the copy kept for it."""
    return t._raw if is_resident(t) else device_params._SHARED[id(t)][1]


def _addresses(tensors):
    return [_device_array(t).unsafe_buffer_pointer() for t in tensors]


def _eager_run(kind, steps):
    model, opt = make(MLP, kind)
    step = standard_step(model, opt)
    with eager_mode():
        losses = [float(step(*batch(i)).numpy()) for i in range(steps)]
    return losses, snapshot(model, opt)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_a_step_computes_new_values_into_the_donated_buffers_and_equals_eager(kind):
    model, opt = make(MLP, kind)
    step = to_static(standard_step(model, opt))
    losses = [float(step(*batch(0)).numpy())]
    state = state_tensors(model, opt)
    assert state and all(t._raw is not None for t in state)
    registered = None
    for i in range(1, 6):
        if i == 2:  # per-parameter bookkeeping is made once, not per step
            registered = len(weakref.finalize._registry)
        before = _addresses(state)
        old_buffers = [_device_array(t) for t in state]
        losses.append(float(step(*batch(i)).numpy()))
        # Every replaced value lives where its old value lived: XLA reused the
        # donated buffer (the old device array is gone) instead of allocating.
        assert _addresses(state) == before
        assert all(b.is_deleted() for b in old_buffers)
    assert len(weakref.finalize._registry) == registered
    eager_losses, eager_state = _eager_run(kind, 6)
    assert np.allclose(losses, eager_losses, rtol=1e-5)
    assert same(snapshot(model, opt), eager_state)
    # The step program's executable donates exactly the written parameters.
    exe = _step_executables(step, *batch(0))
    assert len(exe) == 1 and len(exe[0].donates) == len(state)
    assert "tf.aliasing_output" in exe[0].lowered.as_text()


def _step_executables(static_function, *args):
    """The XLA executables of the step's programs for `args`' signature."""
    runners = []
    for variant in static_function.get_concrete_program(*args).variants:
        runners.extend(variant._runners.values())
    return [e for r in runners for e in r._part.xla._executables.values()]


def test_an_array_someone_holds_keeps_its_value_and_the_others_are_still_donated():
    model, opt = make(MLP, "sgd")
    step = to_static(standard_step(model, opt))
    step(*batch(0))
    weight = model.parameters()[0]
    held = weight.numpy()              # a user's reference to the current value
    kept = held.copy()
    others = model.parameters()[1:]
    before = _addresses(others)
    step(*batch(1))
    assert np.array_equal(held, kept)  # not overwritten by the next step
    assert weight.numpy() is not held and not np.array_equal(weight.numpy(), kept)
    assert _addresses(others) == before
    eager_model, eager_opt = make(MLP, "sgd")
    eager_step = standard_step(eager_model, eager_opt)
    with eager_mode():
        eager_step(*batch(0))
        eager_step(*batch(1))
    assert same(snapshot(model, opt), snapshot(eager_model, eager_opt))


def test_a_taped_forward_keeps_its_parameters_for_its_backward_across_a_step():
    """A converted forward run for gradients holds the parameters it read; a
    step in between must not donate them from under its backward."""
    model, opt = make(MLP, "sgd")
    forward = to_static(lambda x: model(x))
    step = to_static(standard_step(model, opt))
    x, y = batch(1)
    with d2s.no_grad():  # twice: the parameters' device copies are made
        forward(x)
        forward(x)
    loss = F.cross_entropy(forward(x), y)  # taped: its backward runs later
    params_then = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    step(*batch(2))
    opt.clear_grad()
    loss.backward()
    got = [p.grad.numpy() for p in model.parameters()]
    # Reference: the same gradient eagerly, from the parameters as they were.
    ref_model, _ = make(MLP, "sgd")
    ref_model.set_state_dict(params_then)
    with eager_mode():
        F.cross_entropy(ref_model(x), y).backward()
    want = [p.grad.numpy() for p in ref_model.parameters()]
    assert all(np.allclose(g, w, rtol=1e-5, atol=1e-6) for g, w in zip(got, want))
    assert not all(np.array_equal(p.numpy(), params_then[k])  # the step did update them
                   for k, p in model.state_dict().items())


def checked_step_of(model, opt):
    def checked_step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        assert loss < 100.0, "loss diverged"
        return loss
    return checked_step


def test_a_step_with_a_run_time_check_donates_and_a_failure_commits_nothing():
    """The run returns the old values where its check failed (XLA selects
    them): the buffers are donated, and a failed call changes nothing."""
    model, opt = make(MLP, "sgd")
    step = to_static(checked_step_of(model, opt))
    step(*batch(0))
    [exe] = _step_executables(step, *batch(0))
    state = state_tensors(model, opt)
    assert len(exe.donates) == len(state) and exe.checked
    step(*batch(2))  # (the per-call path from here on)
    before = snapshot(model, opt)
    old_buffers = [_device_array(t) for t in state]
    x, y = batch(1)
    with pytest.raises(AssertionError, match="loss diverged"):
        step(d2s.to_tensor(x.numpy() * 1e4), y)
    assert all(b.is_deleted() for b in old_buffers)  # donated, and yet:
    assert all(t._raw is not None for t in state)
    assert bitwise(snapshot(model, opt), before)
    step(*batch(1))  # training goes on as eager's, the failed call left out
    eager_model, eager_opt = make(MLP, "sgd")
    with eager_mode():
        for i in (0, 2, 1):
            checked_step_of(eager_model, eager_opt)(*batch(i))
    assert same(snapshot(model, opt), snapshot(eager_model, eager_opt))


def test_a_call_that_fails_before_xla_takes_the_buffers_gives_them_back(monkeypatch):
    model, opt = make(MLP, "adam")
    step = to_static(standard_step(model, opt))
    step(*batch(0))
    step(*batch(1))
    before = snapshot(model, opt)

    def failing(self, args):
        raise RuntimeError("device lost")
    monkeypatch.setattr(xla_program.Executable, "call", failing)
    with pytest.raises(RuntimeError, match="device lost"):
        step(*batch(2))
    assert all(t._value is not None for t in state_tensors(model, opt))
    assert same(snapshot(model, opt), before)
    monkeypatch.undo()
    step(*batch(2))  # and training goes on from there, as eager would
    eager_model, eager_opt = make(MLP, "adam")
    eager_step = standard_step(eager_model, eager_opt)
    with eager_mode():
        for i in range(3):
            eager_step(*batch(i))
    assert same(snapshot(model, opt), snapshot(eager_model, eager_opt))


def _step_runners(static_function, *args):
    return [r for variant in static_function.get_concrete_program(*args).variants
            for r in variant._runners.values()]


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_the_per_call_path_of_a_step_reads_eager_updates_between_steps(kind):
    """From its second call a step takes its per-call path (no executable
    lookup, no walk of the results); a parameter the user sets eagerly in
    between is what the next step reads, as eager would."""
    model, opt = make(MLP, kind)
    step = to_static(standard_step(model, opt))
    step(*batch(0))
    [runner] = _step_runners(step, *batch(0))
    assert runner._fast is not None
    step(*batch(1))
    _halve_first_weight(model)   # an eager update between two steps
    losses = [float(step(*batch(i)).numpy()) for i in (2, 0)]

    eager_model, eager_opt = make(MLP, kind)
    eager_step = standard_step(eager_model, eager_opt)
    with eager_mode():
        eager_step(*batch(0))
        eager_step(*batch(1))
        _halve_first_weight(eager_model)
        eager_losses = [float(eager_step(*batch(i)).numpy()) for i in (2, 0)]
    assert np.allclose(losses, eager_losses, rtol=1e-5)
    assert same(snapshot(model, opt), snapshot(eager_model, eager_opt))


def _halve_first_weight(model):
    name, value = next(iter(model.state_dict().items()))
    model.set_state_dict({name: value.numpy() * 0.5}, strict=False)


def test_a_step_accumulating_gradients_takes_the_per_call_path_and_equals_eager():
    """Gradients held between steps are inputs of the step (their types come
    from eager state, not from the signature): the per-call path reads them,
    and the results equal eager's."""
    model, opt = make(MLP, "sgd")
    step = to_static(accumulating_step(model, opt))
    losses = [float(step(*batch(i)).numpy()) for i in range(4)]
    runners = _step_runners(step, *batch(0))
    assert any(r._fast is not None and r._held_types for r in runners)
    eager_model, eager_opt = make(MLP, "sgd")
    eager_step = accumulating_step(eager_model, eager_opt)
    with eager_mode():
        eager_losses = [float(eager_step(*batch(i)).numpy()) for i in range(4)]
    assert np.allclose(losses, eager_losses, rtol=1e-5)
    assert same(snapshot(model, opt), snapshot(eager_model, eager_opt))
