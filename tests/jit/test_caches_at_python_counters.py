"""Caches written at a Python int counter (the counterparts of
test_caches_updated_in_tensor_loops.py's tensor-counter cases): a
preallocated k/v cache written at `cache["k"][:, step]` where `step` is a
Python int advanced by a Python `for` loop — in the function itself, in a
callee, and in a Layer that keeps the cache and the counter between calls.
Each case: eager vs `to_static` on numpy and xla, the caller's objects
holding eager Tensors afterwards."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static

from no_variables_left import assert_no_variables_left

BACKENDS = ["numpy", "xla"]
LAYERS, SLOTS = 2, 5


def _backend(name):
    if name == "xla":
        pytest.importorskip("jax")
    return name


def _read(x, k):
    att = F.softmax((k * x.unsqueeze(1)).sum(-1), axis=-1)
    return d2s.tanh((att.unsqueeze(-1) * k).sum(1) + x)


def attend_into(x, cache, w, step):
    cache["k"][:, step] = d2s.matmul(x, w)
    return _read(x, cache["k"])


def _caches():
    return [{"k": d2s.zeros([2, SLOTS, 3])} for _ in range(LAYERS)]


def callee_at_counter(x, w, n):
    caches = _caches()
    step = 0
    for _ in range(n):
        for c in caches:
            x = attend_into(x, c, w, step)
        step += 1
    return x + caches[0]["k"].sum(1) + caches[-1]["k"].mean(1)


def direct_at_counter(x, w, n):
    caches = _caches()
    step = 0
    for _ in range(n):
        for layer in range(LAYERS):
            caches[layer]["k"][:, step] = d2s.matmul(x, w)
            x = _read(x, caches[layer]["k"])
        step += 1
    return x + caches[0]["k"].sum(1) + caches[-1]["k"].mean(1)


def _inputs():
    rng = np.random.default_rng(5)
    return (d2s.to_tensor(rng.normal(size=(2, 3)).astype("float32") * 0.5),
            d2s.to_tensor(rng.normal(size=(3, 3)).astype("float32") * 0.5))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [callee_at_counter, direct_at_counter], ids=lambda f: f.__name__)
def test_cache_written_at_a_python_counter(fn, backend):
    static = to_static(fn, backend=_backend(backend))
    x, w = _inputs()
    for n in (1, 3, SLOTS):
        np.testing.assert_allclose(static(x, w, n).numpy(), fn(x, w, n).numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=f"n={n}")


class Decoder(nn.Layer):
    """Keeps a preallocated cache and a Python step counter between calls."""

    def __init__(self):
        super().__init__()
        self.w = self.create_parameter([3, 3])
        self.cache = _caches()
        self.step = 0

    def forward(self, x):
        for c in self.cache:
            x = attend_into(x, c, self.w, self.step)
        self.step += 1
        return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_layer_cache_written_at_its_python_counter(backend):
    eager, model = Decoder(), Decoder()
    model.set_state_dict(eager.state_dict())
    fn = to_static(model.forward, backend=_backend(backend))
    x, _ = _inputs()
    for i in range(SLOTS - 1):
        np.testing.assert_allclose(fn(x).numpy(), eager(x).numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"call {i}")
    assert model.step == eager.step == SLOTS - 1
    for c_static, c_eager in zip(model.cache, eager.cache):
        np.testing.assert_allclose(c_static["k"].numpy(), c_eager["k"].numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert_no_variables_left(("model", model))
