"""`scheduler.step()` inside a function `to_static` converts (a training step
that ends `opt.step(); sched.step(); opt.clear_grad()`, as per-batch
schedules are written).

The trace runs once; the program runs on every call. So the step is traced
as an op that advances the scheduler on the host on every run of the
program (the `python_draw` op: a Python call made per run, in program order
on numpy, before the run on xla) and yields the rate the schedule reaches.
That op advances only the scheduler's own numbers (`last_epoch`,
`last_lr`), which no program reads; the optimizers following the scheduler
get the new rate as a write of the step (`overlay.assign`), committed after
the run like their moments, so an update traced before `sched.step()` uses
the old rate and one after it, or `opt.get_lr()`, the new one — as eagerly.
A run that raises after the op has advanced the scheduler's own count
(as an eager loop that raised after `sched.step()` would have).
"""
from __future__ import annotations

import weakref

import numpy as np

from ..core.dispatch import bind
from ..core.ops.python_draws import PythonDraw

__all__ = ["step_on_every_run", "rate_in_trace"]

# trace overlay -> {id(scheduler): the rate Variable its traced step yields}: the
# rest of that trace reads `sched.last_lr` / `sched()` as the stepped rate, as
# eagerly (the entry dies with the trace; nothing is stored in the scheduler)
_rates = weakref.WeakKeyDictionary()


def rate_in_trace(scheduler, overlay):
    """`scheduler.last_lr` read by traced code: the rate a step traced earlier
    in this trace yields, else the scheduler's rate read when each run starts
    (a later call may follow eager or traced steps: never a build-time float)."""
    rate = _rates.get(overlay, {}).get(id(scheduler))
    if rate is None:
        rate = bind("python_draw", call=_SchedulerRead(scheduler._current, (), {}), shape=(),
                    dtype="float64")
        rate.weak = True
    return rate


class _SchedulerStep(PythonDraw):
    """The per-run call: advance the schedule, return its rate."""

    __slots__ = ()

    def __repr__(self):
        return f"<{type(self.fn.__self__).__name__}.step() on every run>"

    def not_saved_because(self):
        return (f"cannot save a program that steps {type(self.fn.__self__).__name__} (a Python "
                "scheduler advanced on every run): save the model's forward, not the training "
                "step")


class _SchedulerRead(_SchedulerStep):
    """The per-run read of the scheduler's current rate."""

    __slots__ = ()

    def __repr__(self):
        return f"<{type(self.fn.__self__).__name__}.last_lr on every run>"


def step_on_every_run(scheduler, overlay, epoch):
    """Trace `scheduler.step(epoch)`: see the module doc."""
    overlay.activate(f"{type(scheduler).__name__}.step()",
                     instead="step the scheduler after the `if` or loop, or between calls")
    value = np.asarray(scheduler._last_lr, np.float64)
    rate = bind("python_draw", call=_SchedulerStep(scheduler._advance, (epoch,), {}),
                shape=(), dtype=value.dtype.name)
    for ref in scheduler._optimizers:
        opt = ref()
        if opt is not None:
            overlay.assign(opt._lr, rate)
    rate.weak = True  # stands for the Python float `last_lr` is eagerly
    _rates.setdefault(overlay, {})[id(scheduler)] = rate
    return rate



