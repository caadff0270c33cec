"""Draws from a random generator the caller holds (`self.rng`, an argument,
a global, a closure cell) in converted code continue the generator's stream
on every run, as eagerly: the same numbers as eager calls from a generator
seeded alike, on numpy and xla. Before, only the module-level generators
were drawn per run; a held one was drawn once while tracing and the number
frozen into the program (a silent difference). A generator the function
makes itself during the call still starts afresh per call, as eagerly."""
from __future__ import annotations

import random

import numpy as np
import pytest

import d2s

BACKENDS = ["numpy", pytest.param("xla", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("jax") is None, reason="needs jax"))]
X = np.ones(3, "float32")


class Noisy(d2s.nn.Layer):
    def __init__(self, seed):
        super().__init__()
        self.rng = np.random.default_rng(seed)

    def forward(self, x):
        return x * self.rng.uniform(1.0, 2.0)


def _through_argument(x, rng):
    return x + rng.normal()


GLOBAL_RNG = random.Random(3)


def _through_global(x):
    return x + GLOBAL_RNG.random()


def _made_inside(x):
    rng = np.random.RandomState(5)
    return x + rng.rand()


def _run(fn, calls):
    return [float(fn().numpy()[0]) for _ in range(calls)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_layer_attribute_generator(backend):
    eager = Noisy(7)
    model = d2s.jit.to_static(Noisy(7), backend=backend)
    want = _run(lambda: eager(d2s.to_tensor(X)), 4)
    got = _run(lambda: model(d2s.to_tensor(X)), 4)
    assert len(set(want)) == 4
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_argument_and_global_generators(backend):
    a, b = np.random.RandomState(11), np.random.RandomState(11)
    f = d2s.jit.to_static(_through_argument, backend=backend)
    want = _run(lambda: _through_argument(d2s.to_tensor(X), a), 3)
    got = _run(lambda: f(d2s.to_tensor(X), b), 3)
    np.testing.assert_allclose(got, want, rtol=1e-6)

    GLOBAL_RNG.seed(3)
    want = _run(lambda: _through_global(d2s.to_tensor(X)), 3)
    GLOBAL_RNG.seed(3)
    g = d2s.jit.to_static(_through_global, backend=backend)
    got = _run(lambda: g(d2s.to_tensor(X)), 3)
    assert len(set(want)) == 3
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_generator_made_inside_starts_afresh_per_call():
    f = d2s.jit.to_static(_made_inside)
    want = _run(lambda: _made_inside(d2s.to_tensor(X)), 2)
    got = _run(lambda: f(d2s.to_tensor(X)), 2)
    assert want[0] == want[1]
    np.testing.assert_allclose(got, want, rtol=1e-6)
