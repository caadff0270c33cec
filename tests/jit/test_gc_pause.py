"""The garbage collector is paused while a program is traced and compiled, and
left as it was afterwards: after errors, nested builds, concurrent builds, and
when the user had turned it off."""
import gc
import threading

import numpy as np
import pytest

import d2s
from d2s.jit import not_to_static, to_static
from d2s.gc_pause import gc_paused

SEEN = []


@not_to_static
def _record():
    SEEN.append(gc.isenabled())


def _traced(x):
    _record()
    if x.sum() > 0:
        x = x * 2
    return x


def _fails(x):
    _record()
    raise RuntimeError("boom while tracing")


def _outer(x):
    _record()
    return to_static(_traced)(x) + 1


def _x():
    return d2s.to_tensor(np.ones(3, np.float32))


@pytest.fixture(autouse=True)
def _collector_on():
    was = gc.isenabled()
    gc.enable()
    del SEEN[:]
    yield
    (gc.enable if was else gc.disable)()


def test_paused_while_tracing_enabled_after():
    out = to_static(_traced)(_x())
    np.testing.assert_allclose(out.numpy(), [2.0, 2.0, 2.0])
    assert SEEN == [False]
    assert gc.isenabled()


def test_enabled_again_after_a_failed_trace():
    with pytest.raises(RuntimeError, match="boom while tracing"):
        to_static(_fails)(_x())
    assert SEEN == [False]
    assert gc.isenabled()


def test_nested_builds_reenable_once_outermost_ends():
    out = to_static(_outer)(_x())
    np.testing.assert_allclose(out.numpy(), [3.0, 3.0, 3.0])
    assert SEEN == [False, False]
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    to_static(_traced)(_x())
    assert SEEN == [False]
    assert not gc.isenabled()


def test_concurrent_builds_leave_it_enabled():
    start = threading.Barrier(2)
    errors = []

    def build():
        try:
            start.wait(timeout=30)
            for _ in range(5):
                with gc_paused():
                    assert not gc.isenabled()
                    to_static(_traced)(_x())
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert gc.isenabled()


def _converted_here(x):
    if x > 0:
        x = x * 2
    return x


def test_paused_while_converting_enabled_after(monkeypatch):
    from d2s.convert import api
    seen, real = [], api.convert_tree

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)
    monkeypatch.setattr(api, "convert_tree", recording)
    monkeypatch.setattr(api, "_by_code", {})
    monkeypatch.setattr(api, "_by_function", api._by_function.__class__())
    monkeypatch.setenv("D2S_CACHE_DIR", "")
    converted, _ = api.convert_function(_converted_here)
    assert seen == [False]
    assert gc.isenabled()
    assert converted(3) == 6 and converted(-1) == -1


def _unsupported_here(x):
    async def inner():
        pass
    return x


def test_enabled_again_after_a_failed_conversion(monkeypatch):
    from d2s.convert import api
    monkeypatch.setattr(api, "_by_code", {})
    monkeypatch.setenv("D2S_CACHE_DIR", "")
    from d2s.convert.errors import UnsupportedSyntaxError
    with pytest.raises(UnsupportedSyntaxError, match="async def"):
        api.convert_function(_unsupported_here)
    assert gc.isenabled()
