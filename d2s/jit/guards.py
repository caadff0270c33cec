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

import numpy as np

from ..core import state

__all__ = ["reading_values", "ValueGuard", "too_many_variants"]


@contextlib.contextmanager
def reading_values():
    """Record, while the block runs, the eager Tensors whose value became a
    Python value; yields the list of `ValueGuard`s (filled at exit)."""
    reads, guards = [], []
    state.value_reads.append(reads)
    try:
        yield guards
    finally:
        state.value_reads.pop()
        seen = set()
        for tensor, value in reads:
            if id(tensor) not in seen:
                seen.add(id(tensor))
                guards.append(ValueGuard(tensor, value))


class ValueGuard:
    """An eager Tensor whose value the trace read: holds while it is unchanged.
    (Tensor arrays are never written in place, so an unchanged `_value` is
    the same array: the identity test is the usual case.)"""

    __slots__ = ("tensor", "value", "label")

    def __init__(self, tensor, value):
        self.tensor = tensor
        self.value = value
        name = getattr(tensor, "name", None)
        self.label = f"tensor '{name}'" if name else \
            f"a {np.asarray(value).dtype.name}{list(np.shape(value))} tensor"

    def holds(self):
        now = self.tensor._value
        if now is self.value:
            return True
        try:
            return bool(np.array_equal(np.asarray(now), np.asarray(self.value)))
        except Exception:
            return False


def too_many_variants(labels, limit):
    """The warning given once when a program's guards took `limit` values."""
    return (f"{', '.join(dict.fromkeys(labels))}: the converted function read these as "
            f"Python values and was traced again for each new value ({limit} so far; the "
            "oldest programs are dropped and it keeps retracing). Keep such state in a "
            "tensor the program can carry (`self.register_buffer(name, d2s.to_tensor(v))` "
            "and tensor arithmetic on it, tensor indexing instead of int(t) as a slice "
            "bound) so that one program serves every call")
