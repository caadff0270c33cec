"""`EffectStep`: a training step that also writes state outliving the call.

A whole-step program (jit.train_step) commits parameters, gradients and
optimizer state, and a parameter or buffer updated in place joins those
commits. Other writes of traced values into objects the caller keeps — a
loss appended to a history list, `self.last_loss = loss`, a metrics dict —
are replayed after each step as for any program (jit.outliving): the step's
result is `(the function's result, the written values)`, and its finish,
which runs only after the whole run succeeded, commits the step and then
performs the writes. Those writes happen in Python after the run, so such a
step has no generated per-call function (`fast_calls` stays empty).
"""
from __future__ import annotations

from .concrete_program import _NoFastCalls
from .train_step import StepProgram

__all__ = ["EffectStep"]


class EffectStep(StepProgram):
    """A StepProgram with `writes` (jit.outliving.Effects) replayed per call."""

    def __init__(self, *args, writes, **kwargs):
        self.writes = writes
        super().__init__(*args, **kwargs)
        self.fast_calls = _NoFastCalls()

    def _finisher(self):
        commit = super()._finisher()
        replay = self.writes.replay

        def finish(tensors, results):
            result, values = commit(tensors, results)
            replay(values, tensors)  # (the inputs it writes in place: this call's)
            return result
        return finish

    def __call__(self, tensors, backend=None):
        self.writes.check_inputs(tensors)  # (before the run: as eagerly, before the write)
        return super().__call__(tensors, backend)

    def matches(self, tensors):
        # (a Python value a write replaced: the program was built for the old one;
        # an input written in place: for calls passing the same Tensors alike)
        return self.writes.hold() and self.writes.aliases_hold(tensors) \
            and super().matches(tensors)
