"""Tiered execution of `to_static` programs on numpy (executor.interpreted_calls):
a forward's first call runs on the reference interpreter, its second call
compiles the generated code, and both give the eager function's values and
errors. Training steps compile on their first call.

The suite runs with programs compiled at once (tests/conftest.py); each test
here sets the tiering it checks and the executor mode, so these tests mean
the same in the interpreter and xla runs of the suite (numpy is pinned).
"""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.backends.numpy import codegen
from d2s.static.executor import (executor_mode, interpreted_calls, set_executor_mode,
                                 set_interpreted_calls)
from d2s.backends.numpy.tiering import Plan

import train_step_helpers as helpers


@pytest.fixture
def tiered():
    """Compiled mode, first call interpreted (the users' default); counts
    the programs whose code is generated."""
    previous_mode, previous_calls = executor_mode(), set_interpreted_calls(1)
    set_executor_mode("compiled")
    built = []
    init = codegen.CompiledFunction.__init__

    def counting(self, view, name="program"):
        built.append(name)
        init(self, view, name)
    codegen.CompiledFunction.__init__ = counting
    try:
        yield built
    finally:
        codegen.CompiledFunction.__init__ = init
        set_interpreted_calls(previous_calls)
        set_executor_mode(previous_mode)


def T(v, dtype=np.float64, stop_gradient=True):
    t = d2s.to_tensor(np.array(v, dtype))
    t.stop_gradient = stop_gradient
    return t


def blocks(x):
    if x.sum() > 0:
        x = x * 0.5
    else:
        x = x + 1.0
    n = d2s.zeros([], "int64")
    while n < 3:
        x = x * x + 0.25
        n = n + 1
    return x


def eager(fn, *args):
    d2s.jit.enable_to_static(False)
    try:
        return fn(*args)
    finally:
        d2s.jit.enable_to_static(True)


def test_first_call_interprets_second_compiles_then_runs_the_code(tiered):
    sf = to_static(blocks, backend="numpy")
    inputs = [T([0.5, -0.25]), T([-2.0, 0.5]), T([1.0, 1.0])]
    outs = [sf(x).numpy() for x in inputs]
    for x, out in zip(inputs, outs):
        np.testing.assert_array_equal(out, eager(blocks, x).numpy())
    assert tiered == ["forward"]  # built once, on the second call
    program = sf.concrete_program
    assert program.executable("numpy")._forward_fn.plan is Plan.COMPILED
    assert program.executable("numpy")._forward_fn.calls == 1


def test_first_call_generates_no_code(tiered):
    sf = to_static(blocks, backend="numpy")
    sf(T([0.5, -0.25]))
    assert tiered == []
    assert sf.concrete_program.executable("numpy")._forward_fn.plan is Plan.UNDECIDED


@pytest.mark.parametrize("calls", [0, 3])
def test_interpreted_calls_sets_when_code_is_generated(tiered, calls):
    set_interpreted_calls(calls)
    sf = to_static(blocks, backend="numpy")
    for k in range(calls + 2):
        x = T([0.5 + k, -0.25])
        np.testing.assert_array_equal(sf(x).numpy(), eager(blocks, x).numpy())
        assert tiered == ([] if k < calls else ["forward"]), k


def test_interpreter_mode_never_generates_code(tiered):
    set_executor_mode("interpreter")
    sf = to_static(blocks, backend="numpy")
    for _ in range(3):
        np.testing.assert_array_equal(sf(T([1.0, 2.0])).numpy(),
                                      eager(blocks, T([1.0, 2.0])).numpy())
    assert tiered == []


def test_lowered_text_compiles_on_demand(tiered):
    sf = to_static(blocks, backend="numpy")
    sf(T([1.0]))
    assert "def " in sf.concrete_program.lowered_text(backend="numpy")
    assert tiered == ["forward"]


@pytest.mark.parametrize("value, calls, warns", [("2", 2, False), ("0", 0, False),
                                                 ("x", 1, True), ("-1", 1, True)])
def test_the_environment_sets_the_count(value, calls, warns):
    code = ("import warnings; warnings.simplefilter('always')\n"
            "from d2s.static.executor import interpreted_calls; print(interpreted_calls())")
    env = dict(os.environ, D2S_INTERPRETED_CALLS=value)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(calls)]
    assert ("D2S_INTERPRETED_CALLS" in proc.stderr) is warns, proc.stderr


def test_setting_checks_its_value():
    for bad in (-1, 1.5, "1", True):
        with pytest.raises(ValueError, match="interpreted calls"):
            set_interpreted_calls(bad)
    assert interpreted_calls() >= 0


# ---- errors: the same from the interpreted first call and from the code --------------

def index_in_loop(x, n):
    s = x[0]
    for i in range(n):
        s = s + x[i]
    return s


def raise_in_branch(x):
    if x.sum() < 0:
        raise ValueError("x must have a non-negative sum")
    return x * 2


def undefined_after_loop(x, n):
    i = d2s.zeros([], "int64")
    while i < n:
        y = x * 2.0
        i = i + 1
    return y  # a NameError when the loop ran zero times


def _error(call):
    with pytest.raises(Exception) as info:
        call()
    e = info.value
    return type(e), str(e), list(getattr(e, "__notes__", []))


@pytest.mark.parametrize("fn, bad, good", [
    (index_in_loop, (T([1.0, 2.0, 3.0]), T(5, np.int64)), (T([1.0, 2.0, 3.0]), T(2, np.int64))),
    (raise_in_branch, (T([-1.0, -2.0]),), (T([1.0, 2.0]),)),
    (undefined_after_loop, (T([1.0]), T(0, np.int64)), (T([1.0]), T(2, np.int64))),
])
def test_run_time_errors_are_the_same_interpreted_and_compiled(tiered, fn, bad, good):
    sf = to_static(fn, backend="numpy")
    interpreted = _error(lambda: sf(*bad))   # the first call: interpreted
    assert tiered == []
    sf(*good)                                 # the second: compiles
    assert tiered == ["forward"]
    compiled = _error(lambda: sf(*bad))
    assert compiled == interpreted
    assert "test_tiered_first_call.py" in interpreted[1] + "".join(interpreted[2])
    assert len(sf.program_cache) == 1


# ---- gradients ----------------------------------------------------------------------------

def grads_of(fn, x):
    x = T(x, stop_gradient=False)
    fn(x).sum().backward()
    return x.grad.numpy()


def test_gradients_interpreted_then_compiled(tiered):
    sf = to_static(blocks, backend="numpy")
    for k in range(3):
        x = [0.3 + k, -0.2]
        np.testing.assert_allclose(grads_of(sf, x), grads_of(lambda t: eager(blocks, t), x),
                                   rtol=1e-12)
    program = sf.concrete_program
    assert program.executable("numpy")._grad_forward_fn.plan is Plan.COMPILED
    assert sorted(tiered) == ["backward", "forward_for_grad"]


def test_a_tape_recorded_interpreted_runs_backward_after_the_compile(tiered):
    sf = to_static(blocks, backend="numpy")
    x1, x2 = T([0.3, -0.2], stop_gradient=False), T([1.5, 0.1], stop_gradient=False)
    y1 = sf(x1)        # interpreted: the tape holds the forward's scope
    y2 = sf(x2)        # compiled: the tape holds the saved values
    assert tiered == ["forward_for_grad"]
    (y1.sum() + y2.sum()).backward()
    for x in (x1, x2):
        np.testing.assert_allclose(
            x.grad.numpy(), grads_of(lambda t: eager(blocks, t), x.numpy()), rtol=1e-12)


# ---- threads ---------------------------------------------------------------------------------

def test_concurrent_first_calls_agree_and_compile_once(tiered):
    sf = to_static(blocks, backend="numpy")
    sf(T([0.0]))  # the trace, before the threads
    results, errors = {}, []
    start = threading.Barrier(8)

    def worker(k):
        try:
            start.wait()
            for j in range(4):
                x = T([0.1 * k - 0.3 + j])
                results[(k, j)] = (sf(x).numpy(), eager(blocks, x).numpy())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got, want in results.values():
        np.testing.assert_array_equal(got, want)
    assert tiered == ["forward"]


# ---- training steps compile at once -----------------------------------------------------

def test_a_training_step_compiles_on_its_first_call(tiered):
    model, opt = helpers.make()
    eager_model, eager_opt = helpers.make()

    def step(x, y):
        loss = d2s.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    def eager_step(x, y):
        loss = d2s.nn.functional.cross_entropy(eager_model(x), y)
        loss.backward()
        eager_opt.step()
        eager_opt.clear_grad()
        return loss

    sf = to_static(step, backend="numpy")
    x, y = helpers.BATCHES[0]
    loss = sf(d2s.to_tensor(x), d2s.to_tensor(y))
    assert any(name.startswith("train_step") for name in tiered), tiered
    np.testing.assert_array_equal(loss.numpy(),
                                  eager_step(d2s.to_tensor(x), d2s.to_tensor(y)).numpy())
    for p, q in zip(model.parameters(), eager_model.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
