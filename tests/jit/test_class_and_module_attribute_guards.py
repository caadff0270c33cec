"""Read guards on attributes that live on a class or in a user module: a
class used as a config (`Cfg.k`), a constant on the Layer's class
(`self.scale`, found on the class), a module of the user's own holding
settings (`settings.K`). None of them sits in an object a call can reach, and
none of their changes passes through a Layer's `__setattr__`, so each is
checked on every call; a changed value traces again and the converted
function computes what eager computes, on numpy and xla. Methods,
properties and the constants of d2s, numpy or the standard library are not
values baked into the program and get no guard."""
import math
import sys

import numpy as np
import pytest

import d2s
from d2s.jit.concrete_program import GuardedProgram

BACKENDS = ["numpy", "xla"]


class Cfg:
    k = 2.0


class Scaled(d2s.nn.Layer):
    scale = 2.0

    def forward(self, x):
        return x * self.scale


class UsesMethodsAndLibraries(d2s.nn.Layer):
    def helper(self, x):
        return x + 1.0

    @property
    def factor(self):
        return 3.0

    def forward(self, x):
        return self.helper(x) * self.factor * math.pi + np.e


def _backend(name):
    if name == "xla":
        pytest.importorskip("jax")
    return name


def t(value):
    return d2s.to_tensor(np.asarray(value, dtype="float32"))


def _times_cfg(x):
    return x * Cfg.k


@pytest.fixture
def restore_cfg():
    yield
    Cfg.k, Scaled.scale = 2.0, 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_class_used_as_a_config(backend, restore_cfg):
    direct = d2s.jit.to_static(lambda x: x * Cfg.k, backend=_backend(backend))
    through_helper = d2s.jit.to_static(lambda x: _times_cfg(x) + 0.0, backend=backend)
    x = t([1.0, 2.0])
    for k in (2.0, 3.0, 5.0):
        Cfg.k = k
        np.testing.assert_allclose(direct(x).numpy(), [k, 2 * k], rtol=1e-6)
        np.testing.assert_allclose(through_helper(x).numpy(), [k, 2 * k], rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_layer_constant_on_its_class_then_shadowed_by_the_instance(backend, restore_cfg):
    model = Scaled()
    converted = d2s.jit.to_static(model.forward, backend=_backend(backend))
    x = t([1.0, -1.0])
    np.testing.assert_allclose(converted(x).numpy(), [2.0, -2.0], rtol=1e-6)
    Scaled.scale = 6.0
    np.testing.assert_allclose(converted(x).numpy(), [6.0, -6.0], rtol=1e-6)
    model.scale = 9.0  # the instance's own now: the class's is no longer read
    np.testing.assert_allclose(converted(x).numpy(), [9.0, -9.0], rtol=1e-6)
    Scaled.scale = 7.0
    np.testing.assert_allclose(converted(x).numpy(), model.forward(x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(converted(x).numpy(), [9.0, -9.0], rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_user_module_of_settings(backend, tmp_path, monkeypatch):
    (tmp_path / "d2s_test_settings.py").write_text("K = 2.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "d2s_test_settings", raising=False)
    import d2s_test_settings as settings
    converted = d2s.jit.to_static(lambda x: x * settings.K, backend=_backend(backend))
    x = t([1.0, 3.0])
    np.testing.assert_allclose(converted(x).numpy(), [2.0, 6.0], rtol=1e-6)
    settings.K = 4.0
    np.testing.assert_allclose(converted(x).numpy(), [4.0, 12.0], rtol=1e-6)


def test_methods_properties_and_library_constants_are_not_guarded():
    model = UsesMethodsAndLibraries()
    converted = d2s.jit.to_static(model.forward)
    x = t([1.0])
    for _ in range(3):
        np.testing.assert_allclose(converted(x).numpy(), model.forward(x).numpy(), rtol=1e-6)
    assert not isinstance(converted.concrete_program, GuardedProgram)
    assert len(converted.program_cache) == 1


def test_past_the_variant_limit_warns_naming_the_class_attribute(restore_cfg):
    converted = d2s.jit.to_static(lambda x: x * Cfg.k)
    x = t([1.0])
    with pytest.warns(UserWarning, match=r"Cfg\.k \(read at .*test_class_and_module"):
        for i in range(GuardedProgram.MAX_VARIANTS + 2):
            Cfg.k = 1.0 + i
            np.testing.assert_allclose(converted(x).numpy(), [1.0 + i], rtol=1e-6)
