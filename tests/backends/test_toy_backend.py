"""A backend outside d2s, declared only through `d2s.backends.base`
(tests/backends/toy_backend): programs run on it, a program it cannot run
runs on numpy after exactly one `BackendFallbackWarning` naming the op and
the user's line, and it touches no other package."""
import ast
import inspect
import pathlib
import warnings

import numpy as np
import pytest

import d2s
from d2s import backends, static
from d2s.backends import BackendFallbackWarning
from d2s.backends.base import Backend, Executable


def affine(x, y):
    return x * 2.0 + y - y * y


def with_tanh(x, y):
    z = x * y
    return d2s.tanh(z) + y  # the toy backend has no tanh


def _inputs():
    rng = np.random.default_rng(0)
    return [d2s.to_tensor(rng.standard_normal((2, 3)).astype("float32")) for _ in range(2)]


def _line_of(fn, text):
    source, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(source) if text in line)


def test_a_program_of_its_ops_runs_on_the_toy_backend_alone(toy):
    sf = d2s.jit.to_static(affine, backend="toy")
    x, y = _inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        for _ in range(3):  # the first call, and the per-call path after it
            out = sf(x, y)
            np.testing.assert_allclose(out.numpy(), affine(x, y).numpy(), rtol=1e-6)
    assert toy.RUNS.count("multiply") == 6  # (two per call: it ran every call)
    concrete = sf.get_concrete_program(x, y)
    assert list(concrete._runners) == ["toy"]  # numpy's executable never made
    assert isinstance(concrete._runners["toy"], Executable)
    assert "toy.multiply(x" in sf.lowered_text(x, y)


def test_an_op_without_a_rule_runs_on_numpy_after_one_warning(toy):
    sf = d2s.jit.to_static(with_tanh, backend="toy")
    x, y = _inputs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [sf(x, y) for _ in range(3)]
    fallbacks = [w for w in caught if w.category is BackendFallbackWarning]
    assert len(fallbacks) == 1
    message = str(fallbacks[0].message)
    assert "toy backend: op 'tanh'" in message and "numpy backend" in message
    assert f"{pathlib.Path(__file__).name}, line {_line_of(with_tanh, 'd2s.tanh')}" in message
    assert fallbacks[0].filename == __file__  # reported at the user's line
    want = np.tanh(x.numpy() * y.numpy()) + y.numpy()
    for out in outs:
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    assert toy.RUNS == []  # nothing ran on the toy backend


def test_a_part_it_cannot_run_falls_back_alone(toy):
    """Gradients (a part the toy refuses when asked) run on numpy, one warning;
    the plain forward stays on the toy backend."""
    sf = d2s.jit.to_static(affine, backend="toy")
    x, y = _inputs()
    x.stop_gradient = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            x.clear_grad()
            sf(x, y).sum().backward()
    fallbacks = [str(w.message) for w in caught if w.category is BackendFallbackWarning]
    assert len(fallbacks) == 1 and "computes no gradients" in fallbacks[0]
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 2.0), rtol=1e-6)
    assert toy.RUNS == []
    x.stop_gradient = True
    sf(x, y)
    assert toy.RUNS.count("multiply") == 2


def test_the_executor_runs_on_it(toy):
    prog = static.Program()
    with static.program_guard(prog):
        a = static.data("a", [3], "float32")
        b = static.data("b", [3], "float32")
        out = a * b + a
    feed = {"a": np.arange(3, dtype="float32"), "b": np.full(3, 2.0, "float32")}
    got = static.Executor(backend="toy").run(prog, feed=feed, fetch_list=[out])[0]
    np.testing.assert_allclose(got, feed["a"] * feed["b"] + feed["a"])
    assert toy.RUNS == ["multiply", "add"]


def test_it_is_a_backend_and_imports_only_the_interface(toy):
    assert isinstance(backends.get("toy"), Backend)
    tree = ast.parse(pathlib.Path(toy.__file__).read_text())
    imported = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for a in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"numpy", "d2s.backends.base"}
