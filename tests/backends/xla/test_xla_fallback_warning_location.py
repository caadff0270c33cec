"""A `BackendFallbackWarning` names the user's line that made d2s fall back
(the call of the converted function, its backward, or `Executor.run`),
however deep d2s's own frames are: never `sys:1` nor a d2s file."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s import static  # noqa: E402
from d2s.core.registry import OPS, NotLowerable  # noqa: E402
from d2s.jit import to_static  # noqa: E402
from d2s.static.backend import BackendFallbackWarning  # noqa: E402


def noisy(x):
    if x.sum() > 0:  # a random draw under a tensor `if` has no XLA form
        x = x + d2s.rand([3]) * 0.0
    return x


def _call_forward():
    sf = to_static(noisy, backend="xla")
    x = d2s.to_tensor(np.array([1.0, 2.0, 3.0], "float32"))
    return lambda: sf(x)


def _call_backward():
    def f(x, b):
        return d2s.tanh(x + b).sum()
    sf = to_static(f, backend="xla")
    x = d2s.to_tensor(np.ones((2, 3)), stop_gradient=False)
    b = d2s.to_tensor(np.ones(3), stop_gradient=False)
    out = sf(x, b)
    return lambda: out.backward()


def _call_executor():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [3], "float32")
        y = static.nn.cond(x.sum() > 0, lambda: x + d2s.rand([3]) * 0.0, lambda: x)
    exe = static.Executor(backend="xla")
    return lambda: exe.run(prog, {"x": np.ones(3, "float32")}, [y])


@pytest.mark.parametrize("make", [_call_forward, _call_backward, _call_executor])
def test_fallback_warning_points_at_the_users_line(make, monkeypatch):
    monkeypatch.setitem(OPS["sum_to_like"].lowerings, "xla", NotLowerable("test: no rule"))
    run = make()   # the user's code: a lambda, whose line the warning must name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    fallbacks = [w for w in caught if issubclass(w.category, BackendFallbackWarning)]
    assert fallbacks, [str(w.message) for w in caught]
    for w in fallbacks:
        assert (w.filename, w.lineno) == (__file__, run.__code__.co_firstlineno)
