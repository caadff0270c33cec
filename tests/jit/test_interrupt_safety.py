"""Ctrl-C at any point of a training loop (issue 24 item 3): the exception is
`KeyboardInterrupt`, every parameter and optimizer state holds its value
before the interrupted step or the one the step computes (the eager step
from the same state is the reference), and the next step runs. On xla the
step donates the old buffers to XLA, which is where values used to be lost.
Interrupts come from a timer thread at random times, both as
`_thread.interrupt_main()` and as a real SIGINT (`signal.raise_signal`)."""
import _thread
import random
import signal
import sys
import threading
import time

import numpy as np
import pytest

import d2s
from d2s.core import interrupts

from train_step_helpers import MLP, batch, eager_mode, make, same, standard_step

BACKENDS = ["numpy", "xla"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    if request.param == "xla":
        pytest.importorskip("jax")
    saved = d2s.jit.get_backend()
    d2s.jit.set_backend(request.param)
    yield request.param
    d2s.jit.set_backend(saved)


def _state(model, opt):
    return list(model.parameters()) + [t for _, ts in opt._state.values() for t in ts]


def _values(tensors):
    return [None if t._value is None else np.array(t._value, copy=True) for t in tensors]


def _grads(model):
    return [None if p.grad is None else np.array(p.grad.numpy(), copy=True)
            for p in model.parameters()]


def _set(model, tensors, values, grads):
    for t, v in zip(tensors, values):
        t._value = v.copy()
    for p, g in zip(model.parameters(), grads):
        p._grad = None if g is None else d2s.to_tensor(g)


def _interrupt_soon(rng, delay):
    """A timer that interrupts the main thread at most `delay` seconds after it starts."""
    if rng.random() < 0.5:
        send = _thread.interrupt_main
    else:
        def send():
            signal.raise_signal(signal.SIGINT)
    return threading.Timer(rng.uniform(0, delay), send)


def _mse_step(model, opt):
    """A step with no run-time check (cross_entropy checks its labels): on
    xla, the other per-call path."""
    def step(x, y):
        loss = ((model(x) - y.astype("float32").unsqueeze(-1)) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    return step


# (a Ctrl-C CPython dropped in a gc callback is expected here: see the re-send below)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("make_step", [standard_step, _mse_step], ids=["checked", "unchecked"])
def test_random_interrupts_leave_old_or_new_values_and_the_next_step_runs(backend, make_step):
    model, opt = make(MLP, "adam")
    step = d2s.jit.to_static(make_step(model, opt))
    batches = [batch(i) for i in range(3)]
    for b in batches:
        step(*b)  # compiled and warm: the interrupts land in the per-call path
    state = _state(model, opt)
    start = time.perf_counter()
    for b in batches * 5:
        step(*b)
    per_step = (time.perf_counter() - start) / 15
    rng = random.Random(24)
    swallowed = []  # KeyboardInterrupts CPython dropped as unraisable
    hook = sys.unraisablehook

    def record(unraisable):
        if unraisable.exc_type is KeyboardInterrupt:
            swallowed.append(unraisable)
        hook(unraisable)
    sys.unraisablehook = record
    try:
        _interrupt_repeatedly(model, opt, step, state, batches, per_step, rng, swallowed)
    finally:
        sys.unraisablehook = hook


def _interrupt_repeatedly(model, opt, step, state, batches, per_step, rng, swallowed):
    interrupted, k = 0, 0
    deadline = time.monotonic() + 2.0
    while interrupted < 30 and time.monotonic() < deadline:
        # (state before the step, its gradients, the step's batch: one
        # assignment, so that an interrupt never leaves them from two steps)
        snap = (_values(state), _grads(model), k)
        timer = _interrupt_soon(rng, 3 * per_step)
        try:
            timer.start()  # (the interrupt may land here, too)
            while True:
                snap = (_values(state), _grads(model), k)
                step(*batches[k % 3])
                k += 1
                if timer.finished.is_set() and not timer.is_alive():
                    # sent, and the main thread ran on: CPython ran the
                    # handler inside a gc callback or a finalizer, where an
                    # exception is "unraisable" (printed, then dropped; seen
                    # with hypothesis's gc callback installed by earlier
                    # tests). Only that excuse is accepted; then send again.
                    assert swallowed, "an interrupt was sent and never raised"
                    swallowed.clear()
                    _thread.interrupt_main()
                    time.sleep(1.0)
        except BaseException as e:  # noqa: B902 - the type is what is tested
            assert type(e) is KeyboardInterrupt, repr(e)
        timer.join()
        interrupted += 1
        before, grads_before, at = snap
        now, grads_now = _values(state), _grads(model)
        assert all(v is not None for v in now), "a parameter lost its value"
        # the step from `before`, eagerly: the new values
        _set(model, state, before, grads_before)
        with eager_mode():
            step(*batches[at % 3])
        new = _values(state)
        for old_value, new_value, value in zip(before, new, now):
            assert same(value, old_value) or same(value, new_value)
        _set(model, state, now, grads_now)
        loss = step(*batches[k % 3])  # the next step runs
        assert np.isfinite(loss.numpy()).all()
    assert interrupted >= 5


def test_a_deferred_interrupt_raises_after_the_window_and_only_once():
    token = interrupts.defer()
    assert token is not None  # the main thread, Python's default handler
    _thread.interrupt_main()
    time.sleep(0.01)  # the handler ran (it only recorded the signal)
    with pytest.raises(KeyboardInterrupt):
        interrupts.resume(token)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    interrupts.resume(interrupts.defer())  # nothing pending: nothing raised


def test_a_window_off_the_main_thread_or_under_an_ignored_sigint_defers_nothing():
    tokens = []
    t = threading.Thread(target=lambda: tokens.append(interrupts.defer()))
    t.start()
    t.join()
    assert tokens == [None]
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert interrupts.defer() is None
    finally:
        signal.signal(signal.SIGINT, previous)
