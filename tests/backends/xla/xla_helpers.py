"""Shared by the xla backend tests: run one program on both backends."""
import contextlib
import warnings

import numpy as np

import d2s
from d2s import static
from d2s.static.backend import BackendFallbackWarning


def program_of(static_fn, *args):
    """(program, feed, fetch names) of the program `static_fn(*args)` runs."""
    cp = static_fn.get_concrete_program(*args)
    feed = {v.name: a.numpy() for v, a in zip(cp.inputs, args)}
    return cp.main_program, feed, [v.name for v in cp.outputs]


def run(backend, program, feed, fetch):
    return static.Executor(backend=backend).run(program, feed=feed, fetch_list=fetch)


def run_xla_strict(program, feed, fetch):
    """Run on xla; a fallback to numpy fails the test (the program must lower)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        return run("xla", program, feed, fetch)


def assert_same(got, want):
    """Equal to the numpy backend: dtype, shape, values (rtol 1e-5 f32, 1e-10 f64)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape, (g.shape, w.shape)
        if w.dtype.kind == "f":
            rtol = 1e-10 if w.dtype == np.float64 else 1e-5
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * 1e-2)
        else:
            np.testing.assert_array_equal(g, w)


def both(program, feed, fetch):
    """(numpy results, xla results), xla without fallback; checks they agree."""
    want = run("numpy", program, feed, fetch)
    got = run_xla_strict(program, feed, fetch)
    assert_same(got, want)
    return want, got


def op_types(program):
    return {op.type for op in program.all_ops()}


def xla_program(program):
    """The XlaProgram the (single) xla runner of `program` uses."""
    (runner,) = program.__dict__["_xla_runners"].values()
    return runner.xla


def bitwise(a, b):
    """Exact equality of two training-step snapshots (train_step_helpers.snapshot)
    or lists of arrays: dtypes and every bit, None kept."""
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(bitwise(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float):
        return a == b
    return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


@contextlib.contextmanager
def backend(name):
    """`to_static` functions run on backend `name` inside the block."""
    saved = d2s.jit.get_backend()
    d2s.jit.set_backend(name)
    try:
        yield
    finally:
        d2s.jit.set_backend(saved)


def state_tensors(model, opt):
    """Every Tensor a step replaces: parameters, then optimizer state."""
    return list(model.parameters()) + [t for _, ts in opt._state.values() for t in ts]
