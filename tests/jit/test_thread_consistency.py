"""Calls of one converted model from several threads (issue 24 item 3): a
reader thread calls the model while the main thread trains it with whole
steps; every read succeeds and equals the model's output for the
parameters before or after some step (never a mix: a torn read), on numpy
and on xla (whose step donates the old buffers)."""
import threading

import numpy as np
import pytest

import d2s

from train_step_helpers import MLP, batch, make, same, standard_step


@pytest.fixture(params=["numpy", "xla"])
def backend(request):
    if request.param == "xla":
        pytest.importorskip("jax")
    saved = d2s.jit.get_backend()
    d2s.jit.set_backend(request.param)
    yield request.param
    d2s.jit.set_backend(saved)


def test_a_reader_beside_a_trainer_sees_one_state_per_call(backend):
    model, opt = make(MLP, "sgd")
    step = d2s.jit.to_static(standard_step(model, opt))
    forward = d2s.jit.to_static(model.forward)
    x = batch(0)[0]
    forward(x)
    step(*batch(0))
    states = []  # parameters after each step, in order

    def record():
        states.append([p.numpy().copy() for p in model.parameters()])
    record()
    reads, failures = [], []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            try:
                reads.append(forward(x).numpy().copy())
            except Exception as e:  # noqa: BLE001 - counted, then reported
                failures.append(repr(e))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(400):  # until the reader has read often enough
            step(*batch(i))
            record()
            if i >= 30 and len(reads) >= 30:
                break
    finally:
        stop.set()
        thread.join()
    assert not failures, failures[:3]
    assert len(reads) >= 30
    # the outputs each parameter state gives, computed alone afterwards
    expected = []
    for values in states:
        for p, v in zip(model.parameters(), values):
            p._value = v
        expected.append(forward(x).numpy().copy())
    torn = [r for r in reads if not any(same(r, e) for e in expected)]
    assert not torn, f"{len(torn)} of {len(reads)} reads saw a mix of parameter states"
