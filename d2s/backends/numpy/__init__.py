"""The numpy backend (the default, and what every other backend falls back to).

A program runs as generated Python over the numpy kernels (`codegen`), on
the reference interpreter (`d2s.static.executor`) on its first call and
wherever code cannot be generated (`tiering`). Modules: `forward` (a
to_static program: forward, gradients), `step` (a whole training step, its
in-place plans and the numpy half of its generated call), `update_plan`
(which updates may write in place), `runner` (`d2s.static.Executor`'s
programs), `codegen` (the code generator).
"""
from __future__ import annotations

from .forward import ForwardExecutable
from .runner import Runner
from .step import StepExecutable


class NumpyBackend:
    """The numpy `Backend` (see `d2s.backends.base`): it runs every op."""

    name = "numpy"
    falls_back_itself = True  # (see d2s.backends.executable)

    def executable(self, parts):
        if hasattr(parts, "run_outputs"):  # a whole training step (StepParts)
            return StepExecutable(parts)
        return ForwardExecutable(parts)

    def runner(self, program, feed_names, fetch_names):
        return Runner(program, feed_names, fetch_names)


BACKEND = NumpyBackend()

__all__ = ["BACKEND", "NumpyBackend", "ForwardExecutable", "StepExecutable", "Runner"]
