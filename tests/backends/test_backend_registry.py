"""The backend registry (`d2s.backends`): names, the global default
(`set_backend`, `D2S_BACKEND`) and clear errors for unknown names."""
import os
import subprocess
import sys

import numpy as np
import pytest

import d2s
from d2s import backends
from d2s.backends.base import Backend


def double(x):
    return x * 2.0


@pytest.fixture
def default_restored():
    saved = dict(backends._STATE)
    yield
    backends._STATE.update(saved)


def test_an_unknown_name_lists_the_registered_ones(toy):
    with pytest.raises(ValueError, match=r"unknown backend 'nope'; choose one of "
                                         r"'numpy', 'xla', 'toy'"):
        d2s.jit.to_static(double, backend="nope")
    with pytest.raises(ValueError, match="set_backend: unknown backend 'nope'"):
        d2s.jit.set_backend("nope")
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        d2s.static.Executor(backend="nope")


def test_set_backend_chooses_for_functions_that_do_not(toy, default_restored):
    sf = d2s.jit.to_static(double)
    x = d2s.to_tensor(np.ones(3, "float32"))
    d2s.jit.set_backend("toy")
    assert d2s.jit.get_backend() == "toy" and sf.backend == "toy"
    np.testing.assert_allclose(sf(x).numpy(), 2.0)
    assert toy.RUNS.count("multiply") == 1
    d2s.jit.set_backend("numpy")
    np.testing.assert_allclose(sf(x).numpy(), 2.0)
    assert toy.RUNS.count("multiply") == 1  # this call ran on numpy


def test_d2s_backend_is_the_default_until_set(toy, monkeypatch, default_restored):
    backends._STATE.update(default=None, env=None)  # as in a fresh process
    monkeypatch.setenv("D2S_BACKEND", "toy")
    assert d2s.jit.get_backend() == "toy"
    monkeypatch.setenv("D2S_BACKEND", "numpy")
    assert d2s.jit.get_backend() == "toy"  # read once per process
    d2s.jit.set_backend("numpy")
    assert d2s.jit.get_backend() == "numpy"


def test_an_unknown_d2s_backend_is_a_clear_error():
    env = dict(os.environ, D2S_BACKEND="nope")
    proc = subprocess.run([sys.executable, "-c", "import d2s; d2s.jit.get_backend()"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "D2S_BACKEND: unknown backend 'nope'; choose one of 'numpy', 'xla'" in proc.stderr


def test_every_registered_backend_is_a_backend():
    for name in ["numpy", "xla"]:
        pytest.importorskip("jax") if name == "xla" else None
        backend = backends.get(name)
        assert isinstance(backend, Backend) and backend.name == name


def test_register_backend_checks_its_arguments():
    with pytest.raises(TypeError, match="non-empty str"):
        backends.register_backend("", lambda: None)
    with pytest.raises(TypeError, match="loader"):
        backends.register_backend("x", 42)
    with pytest.raises(ValueError, match="cannot be unregistered"):
        backends.unregister_backend("numpy")


def test_a_registered_loader_runs_once(toy):
    calls = []

    def loader():
        calls.append(1)
        return toy.ToyBackend()
    backends.register_backend("toy2", loader)
    try:
        assert backends.get("toy2") is backends.get("toy2")
        assert calls == [1]
    finally:
        backends.unregister_backend("toy2")
    assert "toy2" not in backends.names()


def test_programs_are_program_parts_and_run_through_executables():
    """What jit hands a backend is the declared ProgramParts (StepParts for a
    training step), and numpy's executables are declared Executables."""
    from d2s.backends.base import Executable, ProgramParts, StepParts
    import d2s.nn as nn
    sf = d2s.jit.to_static(double, backend="numpy")
    x = d2s.to_tensor(np.ones(3, "float32"))
    sf(x)
    concrete = sf.get_concrete_program(x)
    assert isinstance(concrete, ProgramParts) and not isinstance(concrete, StepParts)
    assert isinstance(concrete.executable("numpy"), Executable)
    assert concrete.input_names() == ["x"]

    net = nn.Linear(3, 1)
    opt = d2s.optimizer.SGD(0.1, parameters=net.parameters())

    def step(x):
        loss = net(x).sum()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    st = d2s.jit.to_static(step, backend="numpy")
    before = net.weight.numpy().copy()
    st(x.reshape([1, 3]))
    program = st.get_concrete_program(x.reshape([1, 3]))
    assert isinstance(program, StepParts)
    assert isinstance(program.executable("numpy"), Executable)
    # (float32 arithmetic, as the step's: a weight near 0.1 leaves a small difference)
    np.testing.assert_allclose(net.weight.numpy(), before - np.float32(0.1), rtol=1e-6,
                               atol=1e-7)
