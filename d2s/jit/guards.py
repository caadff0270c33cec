"""Value guards: the Python values a program was built for.

A trace bakes every Python value it reads into the program. Two kinds come
from state the caller keeps changing between calls, and a program built
for the first call's value would silently compute with it on later calls:

- an eager Tensor (a parameter, a buffer, a captured tensor) whose value
  the traced code turned into a Python value: `int(self.queue_ptr)` as a
  slice bound, `if not self.initialized:` (d2s.core.tensor records these
  reads in `state.value_reads` while a trace runs);
- a Python value the trace wrote into an object that outlives the call
  (`self.step += 1`), recorded by jit.outliving: the write is replayed after
  each run and the entry becomes a guard.

Each guard is checked before a run (`jit.outliving.Effects.hold`), and a
program whose guards fail is traced again for the values now and kept
beside the others (`EffectProgram._variant`), as TorchDynamo's guards and
PaddlePaddle's dy2static program cache do. A program that records no guard
pays nothing per call.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..core import state
from ..static.origins import user_origin

__all__ = ["reading_values", "ValueGuard", "locate", "too_many_variants"]


@contextlib.contextmanager
def reading_values():
    """Record, while the block runs, the eager Tensors whose value became a
    Python value; yields the list of `ValueGuard`s (filled at exit)."""
    reads, guards = _Reads(), []
    state.value_reads.append(reads)
    try:
        yield guards
    finally:
        active = state.value_reads
        for i, r in enumerate(active):  # (by identity: lists compare by content)
            if r is reads:
                del active[i]
                break
        guards.extend(ValueGuard(tensor, value, where) for tensor, value, where in reads)


class _Reads(list):
    """The reads of one trace: each tensor once, with the user's line that read
    it (d2s.core.tensor appends `(tensor, value)`; only traces pay for this),
    made in the thread that traces."""

    def __init__(self):
        super().__init__()
        self.thread = threading.get_ident()

    def append(self, item):
        if threading.get_ident() != self.thread:
            return
        tensor, value = item
        for t, _, _ in self:
            if t is tensor:
                return
        super().append((tensor, value, user_origin()))


class ValueGuard:
    """An eager Tensor whose value the trace read: holds while it is unchanged.
    (Tensor arrays are never written in place, so an unchanged `_value` is
    the same array: the identity test is the usual case.)"""

    __slots__ = ("tensor", "value", "label", "path")

    def __init__(self, tensor, value, where=None):
        self.tensor = tensor
        self.value = value
        name = getattr(tensor, "name", None)
        label = f"tensor '{name}'" if name else \
            f"a {np.asarray(value).dtype.name}{list(np.shape(value))} tensor"
        if where is not None:
            label += f" (read as a Python value at {where[0]}, line {where[1]}: `{where[2]}`)"
        self.label = label
        self.path = None  # (dict, key) the trace found it in: read from there (`locate`)

    def holds(self):
        tensor = self.tensor
        if self.path is not None:  # (an attribute the caller may rebind to another Tensor)
            d, key = self.path
            tensor = d.get(key)
            if tensor is not self.tensor and not hasattr(tensor, "_value"):
                return False
        now = tensor._value
        if now is self.value:
            return True
        try:
            return bool(np.array_equal(np.asarray(now), np.asarray(self.value)))
        except Exception:
            return False


def locate(guards, containers):
    """Give each guard the dict entry that held its tensor before the trace
    (`containers`: jit.outliving.Watch.before), so that a Layer attribute or
    buffer rebound to a new Tensor between calls is checked, not the old one."""
    wanted = {id(g.tensor): g for g in guards}
    for container, copy, label, _ in containers:
        if not isinstance(container, dict):
            continue
        for key, value in copy.items():
            g = wanted.get(id(value))
            if g is not None and g.path is None and value is g.tensor:
                g.path = (container, key)
                g.label = f"{label}[{key!r}]" + g.label[g.label.find(" (read"):] \
                    if " (read" in g.label else f"{label}[{key!r}]"


def too_many_variants(labels, limit):
    """The warning given once when a program's guards took `limit` values."""
    return (f"{', '.join(dict.fromkeys(labels))}: the converted function read these as "
            f"Python values and was traced again for each new value ({limit} so far; the "
            "oldest programs are dropped and it keeps retracing). Keep such state in a "
            "tensor the program can carry (`self.register_buffer(name, d2s.to_tensor(v))` "
            "and tensor arithmetic on it, tensor indexing instead of int(t) as a slice "
            "bound) so that one program serves every call")
