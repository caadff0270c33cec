"""The xla backend: d2s Programs lowered to XLA through JAX.

The only package that imports jax (see `_jax`). The registry
(`d2s.backends`) reaches it through `BACKEND` (a `d2s.backends.base.Backend`):
`d2s.static.Executor(backend="xla")` through its `runner` (`runner_for`), a
`to_static` program (a `d2s.jit.ConcreteProgram`) through its `executable`
(`ConcreteRunner`, `StepRunner`); nothing below imports it.

Modules: `lowering` (ops -> JAX, with the registry's per-op rules),
`control_flow` (cond / while / undefined / raise; which names may be
undefined is `d2s.static.definedness`), `values` (environments, tensor
arrays), `errors` (run-time error codes), `params` (parameters kept on the device),
`program` (compile per shape, run), `runner` (fall back to numpy),
`concrete` (a to_static program: forward, gradients), `persistent`
(cross-process cache of executables), `lowered_cache` (cross-process cache
of lowered programs, called through `stored_call`).
"""
from __future__ import annotations

import importlib

from ...core.interrupts import deferred

# Imported on first use (PEP 562), so that the rules package
# (`d2s.backends.xla.rules`, which speaks only through the `ns` context) loads
# without jax: the registry's coverage test reads it on a machine without the
# extra. Any of these names imports jax, with the install hint when missing.
_LAZY = {
    "concrete_runner": (".concrete", "ConcreteRunner"),
    "step_runner": (".concrete", "StepRunner"),
    "LoweringError": (".errors", "LoweringError"),
    "Unsupported": (".errors", "Unsupported"),
    "XlaProgram": (".program", "XlaProgram"),
    "runner_for": (".runner", "runner_for"),
}

__all__ = ["XlaProgram", "runner_for", "concrete_runner", "step_runner", "Unsupported", "LoweringError"]


class XlaBackend:
    """The xla `Backend` (see `d2s.backends.base`); jax is imported on first use."""

    name = "xla"
    falls_back_itself = True  # (see d2s.backends.executable)

    def executable(self, parts):
        if hasattr(parts, "run_outputs"):  # a whole training step (StepParts)
            return _lazy("step_runner")(parts)
        return _lazy("concrete_runner")(parts)

    def runner(self, program, feed_names, fetch_names):
        return _lazy("runner_for")(program, feed_names, fetch_names)


BACKEND = XlaBackend()


def _lazy(name):
    value = globals().get(name)
    return value if value is not None else __getattr__(name)


def __getattr__(name):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    # Ctrl-C held back while JAX and its C extensions load and its runtime
    # starts: an interrupt in the middle can leave them half made, and the
    # interpreter crashing on the way out (see `d2s.core.interrupts`).
    with deferred():
        from . import _jax  # noqa: F401  (ImportError with the install hint when missing)
        value = getattr(importlib.import_module(module, __name__), attr)
    globals()[name] = value
    return value
