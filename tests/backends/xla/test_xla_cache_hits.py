"""Cache hits of a `to_static` function on XLA take the shortest path (the
program's per-call function, called straight from `StaticFunction`); these
tests pin that nothing the longer path decides is skipped on the way: the
switch, the backend chosen at each call, parameters updated or rebound
eagerly (sent again once, never stale), results that are the caller's own
writable arrays, and the structures a function returns."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.nn as nn  # noqa: E402
from d2s.jit import to_static  # noqa: E402
from d2s import backends as backend_state  # noqa: E402
from d2s.core.tensor import DeviceTensor, Tensor  # noqa: E402


@pytest.fixture
def default_backend():
    saved = dict(backend_state._STATE)
    yield
    backend_state._STATE.update(saved)


def _x(seed=0, shape=(4, 3)):
    return d2s.to_tensor(np.random.default_rng(seed).normal(size=shape).astype("float32"))


def _reference(layer, x):
    """The layer's output computed eagerly on numpy."""
    with d2s.no_grad():
        return np.tanh(x.numpy() @ layer.weight.numpy() + layer.bias.numpy())


def test_an_eager_update_between_cache_hits_is_sent_once_and_never_stale(sends):
    d2s.seed(3)
    layer = nn.Linear(3, 2)
    f = to_static(lambda x: d2s.tanh(layer(x)), backend="xla")
    x = _x()
    with d2s.no_grad():
        for _ in range(4):  # builds, then cache hits on the per-call path
            np.testing.assert_allclose(f(x).numpy(), _reference(layer, x), rtol=1e-5)
    assert len(sends) == 2  # weight and bias, once
    layer(x).sum().backward()  # an eager update of the weight only
    d2s.optimizer.SGD(learning_rate=0.5, parameters=[layer.weight]).step()
    with d2s.no_grad():
        got = f(x).numpy()
        np.testing.assert_allclose(got, _reference(layer, x), rtol=1e-5)
        for _ in range(3):
            np.testing.assert_allclose(f(x).numpy(), got, rtol=0)
    assert len(sends) == 3 and sends[-1] is layer.weight.numpy()  # the new weight, once


def test_a_replaced_layer_attribute_is_read_on_the_next_cache_hit():
    x = _x(1)

    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        @to_static(backend="xla")
        def forward(self, x):
            return d2s.tanh(self.fc(x))
    d2s.seed(5)
    net = Net()
    with d2s.no_grad():
        for _ in range(3):
            net(x)
        net.fc.bias = d2s.to_tensor(np.full([2], 5.0, "float32"))
        np.testing.assert_allclose(net(x).numpy(), _reference(net.fc, x), rtol=1e-5)
        net.fc.bias = d2s.to_tensor(np.zeros([2], "float64"))
        with pytest.raises(ValueError, match="was replaced by a float64"):
            net(x)


def test_the_switch_and_the_backend_are_read_at_every_cache_hit(default_backend, monkeypatch):
    calls = []

    @to_static
    def f(x, k):
        calls.append("traced or eager")  # runs when traced, and in every eager call
        return x * k + 1.0, x.sum()
    d2s.jit.set_backend("xla")
    x = _x(2)
    with d2s.no_grad():
        for _ in range(3):
            f(x, 2.0)
        assert len(calls) == 1
        program = f.program_cache.concrete_programs()[0]
        assert "xla" in program.fast_calls
        d2s.jit.enable_to_static(False)
        try:
            f(x, 2.0)
        finally:
            d2s.jit.enable_to_static(True)
        assert len(calls) == 2  # the original function ran
        # a cache hit on xla (served by the inline cache, jit.inline_cache): its
        # results are the device arrays XLA made
        y, s = f(x, 2.0)
        assert type(y) is DeviceTensor and type(s) is DeviceTensor and len(calls) == 2
        d2s.jit.set_backend("numpy")
        y, s = f(x, 2.0)  # now on numpy: the xla program is not run
        assert type(y) is Tensor and type(s) is Tensor and len(calls) == 2
        np.testing.assert_allclose(y.numpy(), x.numpy() * 2.0 + 1.0, rtol=1e-6)
        np.testing.assert_allclose(s.numpy(), x.numpy().sum(), rtol=1e-6)


@pytest.mark.parametrize("shape", ["single", "tuple", "nested"])
def test_cache_hits_return_the_functions_structure_of_writable_arrays(shape):
    @to_static(backend="xla")
    def f(x):
        y = d2s.tanh(x)
        if shape == "single":
            return y
        if shape == "tuple":
            return y, x.sum()
        return {"y": y, "pair": (x.sum(), 3)}
    x = _x(3)
    want = np.tanh(x.numpy())
    with d2s.no_grad():
        results = [f(x) for _ in range(3)]  # built, first run, cache hit
    for r in results:
        y = r if shape == "single" else (r[0] if shape == "tuple" else r["y"])
        assert isinstance(y, d2s.Tensor)
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
        if shape == "nested":
            assert r["pair"][1] == 3 and isinstance(r["pair"][0], d2s.Tensor)
        y.numpy()[0, 0] = 7.0  # the caller's own array, as on numpy
    assert results[1] is not results[2]
