"""Converting and tracing a function leave no reference cycles behind.

The collector is paused while a function is converted and traced
(`d2s.gc_pause`); what a build drops must then be freed by reference
counting alone. A cycle (a closure that calls itself, astor's generator
holding its own `write`) keeps everything it reaches alive until the
collector's next scan, which then walks it all.
"""
import gc
import importlib.util

import numpy as np

import d2s


def _blocks(x):
    if x.sum() > 0.5:
        x = x * 0.5
    else:
        x = x + 1.0
    n = d2s.zeros([], "int64")
    while n < 2:
        x = x + 0.25
        n = n + 1
    return [x, {"n": n}]


def _cyclic_garbage(action):
    """Objects `action()` leaves unreachable only through cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        result = action()
        return gc.collect(), result
    finally:
        if was_enabled:
            gc.enable()


def test_conversion_leaves_no_cycles(tmp_path, monkeypatch):
    # a module of its own: a new code object, converted anew (not taken
    # from the in-process cache), and its entry written to an empty disk cache
    monkeypatch.setenv("D2S_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "d2s_garbage_case.py"
    path.write_text("def f(x):\n    if x > 0:\n        x = x - 1\n    return x\n")
    spec = importlib.util.spec_from_file_location("d2s_garbage_case", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    garbage, (converted, _) = _cyclic_garbage(lambda: d2s.convert.convert_function(module.f))
    assert garbage == 0
    assert converted(3) == module.f(3) == 2


def test_first_call_leaves_no_cycles():
    x = d2s.to_tensor(np.linspace(-1.0, 1.0, 4).astype("float32"))
    # numpy backend: what d2s itself builds (JAX's own tracing keeps caches
    # with cycles of its own)
    sf = d2s.jit.to_static(_blocks, backend="numpy")
    garbage, out = _cyclic_garbage(lambda: sf(x))
    assert garbage == 0
    expected = _blocks(x)
    np.testing.assert_allclose(out[0].numpy(), expected[0].numpy())
    np.testing.assert_array_equal(out[1]["n"].numpy(), expected[1]["n"].numpy())
