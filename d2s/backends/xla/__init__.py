"""The xla backend: d2s Programs lowered to XLA through JAX.

The only package that imports jax (see `_jax`). `d2s.static.Executor(backend=
"xla")` reaches it through `runner_for`, a `to_static` program (a
`d2s.jit.ConcreteProgram`) through `concrete_runner`; nothing below imports it.

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

from ._jax import jax  # noqa: F401  (ImportError with the install hint when missing)
from .concrete import ConcreteRunner as concrete_runner
from .concrete import StepRunner as step_runner
from .errors import LoweringError, Unsupported
from .program import XlaProgram
from .runner import runner_for

__all__ = ["XlaProgram", "runner_for", "concrete_runner", "step_runner", "Unsupported", "LoweringError"]
