"""Tiered compilation on xla (d2s/backends/xla/background.py): a call whose
shape is not compiled yet runs on numpy while the one worker thread
compiles it; calls after the executable is ready run on XLA. Results agree
with the numpy backend whichever tier ran.

Deterministic: the worker is held busy (`held_worker`) while the first
calls run, so their compile cannot have finished; `background.wait_idle()`
then waits until it has. (The suite runs with D2S_XLA_SYNC=1, see
tests/conftest.py; these tests ask for compile="async", and a compile budget
of 0: queued at the first call.)"""
import threading
import warnings

import numpy as np
import pytest

pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s import nn  # noqa: E402
from d2s.backends.base import BackendFallbackWarning  # noqa: E402
from d2s.backends.xla import background  # noqa: E402
from d2s.core.registry import OPS  # noqa: E402
from d2s.static import InputSpec  # noqa: E402


@pytest.fixture(autouse=True)
def compile_at_once(monkeypatch):
    """A new shape is queued at its first call on any machine (the budget of
    one core is tests/backends/xla/test_compile_budget.py's)."""
    monkeypatch.setenv(background.BUDGET_ENV, "0")


@pytest.fixture
def held_worker():
    """The compile worker busy with a job that waits for `release()`: compiles
    asked for meanwhile stay queued. Released (and drained) at the end."""
    gate = threading.Event()
    job = background._Job(gate.wait)
    assert background._WORKER.submit(job)
    yield gate.set
    gate.set()
    assert background.wait_idle(120)


def _xla_program(sf, *args, part="_forward"):
    """The XlaProgram behind `sf`'s program for `args`, on xla."""
    runner = sf.get_concrete_program(*args)._runners["xla"]
    return getattr(runner, part).xla


def _call(sf, x):
    """`sf(x)` needing no gradient: its forward part runs."""
    with d2s.no_grad():
        return sf(x)


def _compiled(xla):
    return len(xla._executables)


def test_forward_runs_on_numpy_until_compiled_then_on_xla(held_worker):
    dtype, rtol = "float32", 1e-5
    lin = nn.Linear(5, 3)

    def f(x):
        h = d2s.tanh(lin(x))
        while h.sum() < 10.0:
            h = h + 1.0
        return h

    sf_xla = d2s.jit.to_static(f, backend="xla", compile="async")
    sf_np = d2s.jit.to_static(f, backend="numpy")
    x = d2s.to_tensor(np.random.default_rng(0).normal(size=(4, 5)).astype(dtype))
    expect = _call(sf_np, x).numpy()
    first = _call(sf_xla, x)                                # numpy tier: the compile is queued
    xla = _xla_program(sf_xla, x)
    assert _compiled(xla) == 0 and xla.pending([x.numpy()])
    np.testing.assert_allclose(first.numpy(), expect, rtol=rtol)
    assert first.dtype == _call(sf_np, x).dtype and list(first.shape) == [4, 3]
    held_worker()
    assert background.wait_idle(120)
    assert _compiled(xla) == 1 and not xla.pending([x.numpy()])
    second = _call(sf_xla, x)                             # xla tier
    np.testing.assert_allclose(second.numpy(), expect, rtol=rtol)
    assert second.dtype == first.dtype


def test_each_new_length_compiles_in_the_background(held_worker):
    """InputSpec([None, ...]): every length first runs on numpy."""
    lin = nn.Linear(4, 4)

    def f(x):
        return d2s.tanh(lin(x)).sum(axis=0)

    sf = d2s.jit.to_static(f, input_spec=[InputSpec([None, 4], "float32")], backend="xla",
                           compile="async")
    ref = d2s.jit.to_static(f, input_spec=[InputSpec([None, 4], "float32")], backend="numpy")
    rng = np.random.default_rng(1)
    xs = [d2s.to_tensor(rng.normal(size=(n, 4)).astype("float32")) for n in (2, 3, 5)]
    for x in xs:
        # (the backend tolerance: rtol 1e-5 of the values' scale; a column sum
        # can cancel to near zero, where XLA's summation order shows)
        np.testing.assert_allclose(_call(sf, x).numpy(), _call(ref, x).numpy(), rtol=1e-5,
                                   atol=1e-6)
    xla = _xla_program(sf, xs[0])
    assert _compiled(xla) == 0
    held_worker()
    assert background.wait_idle(120)
    assert _compiled(xla) == 3
    for x in xs:
        # (the backend tolerance: rtol 1e-5 of the values' scale; a column sum
        # can cancel to near zero, where XLA's summation order shows)
        np.testing.assert_allclose(_call(sf, x).numpy(), _call(ref, x).numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_gradients_agree_on_either_tier(held_worker):
    lin = nn.Linear(3, 2)

    def f(x):
        return (d2s.tanh(lin(x)) ** 2).sum()

    sf = d2s.jit.to_static(f, backend="xla", compile="async")
    x_np = np.random.default_rng(2).normal(size=(4, 3)).astype("float32")

    def grads(fn):
        lin.clear_gradients()
        x = d2s.to_tensor(x_np, stop_gradient=False)
        fn(x).backward()
        return x.grad.numpy(), lin.weight.grad.numpy()

    expect = grads(f)                                   # eager
    on_numpy = grads(sf)                                # numpy tier (forward and backward)
    x = d2s.to_tensor(x_np, stop_gradient=False)
    grad_forward = _xla_program(sf, x, part="_grad_forward")
    assert _compiled(grad_forward) == 0
    held_worker()
    assert background.wait_idle(120)
    grads(sf)       # the grad forward is ready now; its backward compiles in the background
    assert background.wait_idle(120)
    on_xla = grads(sf)
    assert _compiled(grad_forward) == 1
    backward = next(iter(sf.get_concrete_program(x)._runners["xla"]._backwards.values())).xla
    assert _compiled(backward) == 1
    for got in (on_numpy, on_xla):
        for g, e in zip(got, expect):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_training_step_switches_tier_between_calls(held_worker):
    """A whole step (donating buffers on xla) runs whole on one tier per call;
    the parameters after steps on both tiers equal eager's."""
    def make():
        d2s.seed(3)
        net = nn.Linear(3, 2)
        opt = d2s.optimizer.Adam(learning_rate=0.1, parameters=net.parameters())

        def step(x):
            loss = (net(x) ** 2).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return net, step

    xs = [np.random.default_rng(i).normal(size=(4, 3)).astype("float32") for i in range(4)]
    net_e, step_e = make()
    eager = [float(step_e(d2s.to_tensor(x))) for x in xs]
    net, step = make()
    sf = d2s.jit.to_static(step, backend="xla", compile="async")
    losses = [float(sf(d2s.to_tensor(x))) for x in xs[:2]]          # numpy tier
    xla = sf.get_concrete_program(d2s.to_tensor(xs[0]))._runners["xla"]._part.xla
    assert _compiled(xla) == 0
    held_worker()
    assert background.wait_idle(120)
    assert _compiled(xla) == 1
    losses += [float(sf(d2s.to_tensor(x))) for x in xs[2:]]         # xla tier
    np.testing.assert_allclose(losses, eager, rtol=1e-5)
    for p, q in zip(net.parameters(), net_e.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_sync_compiles_on_the_first_call(held_worker, monkeypatch, how):
    """compile="sync" and D2S_XLA_SYNC=1 compile on the calling thread (the
    held worker shows no compile went there)."""
    lin = nn.Linear(2, 2)
    if how == "argument":
        monkeypatch.delenv("D2S_XLA_SYNC", raising=False)
        sf = d2s.jit.to_static(lambda x: lin(x) * 2.0, backend="xla", compile="sync")
    else:
        monkeypatch.setenv("D2S_XLA_SYNC", "1")
        sf = d2s.jit.to_static(lambda x: lin(x) * 2.0, backend="xla")
    x = d2s.to_tensor(np.ones((3, 2), "float32"))
    out = _call(sf, x)
    assert _compiled(_xla_program(sf, x)) == 1
    np.testing.assert_allclose(out.numpy(), (lin(x) * 2.0).numpy(), rtol=1e-6)


def test_async_argument_wins_over_the_environment(held_worker, monkeypatch):
    monkeypatch.setenv("D2S_XLA_SYNC", "1")
    lin = nn.Linear(2, 2)
    sf = d2s.jit.to_static(lambda x: lin(x) - 1.0, backend="xla", compile="async")
    x = d2s.to_tensor(np.ones((3, 2), "float32"))
    _call(sf, x)
    assert _compiled(_xla_program(sf, x)) == 0


def test_bad_compile_argument_is_a_clear_error():
    with pytest.raises(ValueError, match="compile='sync'"):
        d2s.jit.to_static(lambda x: x, compile="lazy")


def test_failed_background_compile_reports_once_and_numpy_serves(held_worker, monkeypatch):
    def broken(ns, x):
        raise RuntimeError("rule exploded")
    monkeypatch.setitem(OPS["tanh"].lowerings, "xla", broken)
    lin = nn.Linear(3, 7)

    def f(x):
        return d2s.tanh(lin(x)) + 0.5

    sf = d2s.jit.to_static(f, backend="xla", compile="async")
    x = d2s.to_tensor(np.ones((2, 3), "float32"))
    expect = f(x).numpy()
    _call(sf, x)
    held_worker()
    assert background.wait_idle(120)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        outs = [_call(sf, x).numpy() for _ in range(3)]
    reports = [w for w in seen if issubclass(w.category, BackendFallbackWarning)]
    assert len(reports) == 1, [str(w.message) for w in seen]
    message = str(reports[0].message)
    assert "rule exploded" in message and "tanh" in message
    assert "test_background_compile.py" in message  # the op's line
    assert reports[0].filename == __file__           # pointed at the caller
    for out in outs:
        np.testing.assert_allclose(out, expect, rtol=1e-6)
    assert _compiled(_xla_program(sf, x)) == 0


def test_slow_compile_is_one_warning_naming_function_and_shape(held_worker, monkeypatch):
    monkeypatch.setattr(background, "SLOW_S", 0.0)
    lin = nn.Linear(3, 3)

    def slow_to_compile(x):
        return lin(x) * 3.0

    sf = d2s.jit.to_static(slow_to_compile, backend="xla", compile="async")
    x = d2s.to_tensor(np.ones((6, 3), "float32"))
    _call(sf, x)
    held_worker()
    assert background.wait_idle(120)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _call(sf, x)
        _call(sf, x)
    slow = [w for w in seen if issubclass(w.category, background.SlowCompileWarning)]
    assert len(slow) == 1
    text = str(slow[0].message)
    assert "slow_to_compile" in text and "[6, 3]" in text and "\n" not in text
