"""Where eager code meets a whole-step trace.

`Tensor.backward`, `Tensor.clear_grad`, the optimizers and gradient
clipping change eager state: a parameter's value, its `.grad`, an
optimizer's moments. Inside a function that `to_static` is tracing they
must not — the trace runs once, its program on every call — so they ask
`overlay()` for the trace's state overlay and act through it: the overlay
(`d2s.static.state_overlay.StateOverlay`, built by the static layer and
duck-typed here) turns their reads into program inputs and their writes
into program outputs that each run commits. Outside such a trace
`overlay()` is None and they act on the eager objects at once.
"""
from __future__ import annotations

from . import state


def overlay():
    """The state overlay of the `to_static` trace building on this thread, or None
    (eager code, a hand-built `program_guard` program, an `eager_guard` block)."""
    builder = state.current_builder()
    return None if builder is None else builder.overlay


def note_new_tensor(tensor):
    """Called where Tensors are made by user-facing constructors: one made while a
    step is traced is remembered, so that training it is a clear error (the
    program would train the Tensor of the trace, eager code a new one per call)."""
    if state._tls.builders:
        ov = overlay()
        if ov is not None:
            ov.note_new_tensor(tensor)


def note_mode(layer, flag):
    """Called where a Layer's `training` flag is read: one read while a step
    is traced is something its program assumed (its guard checks it per call)."""
    ov = overlay()
    if ov is not None:
        ov.note_mode(layer, flag)
