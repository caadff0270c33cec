"""One consistent parameter state per call, across threads.

A training step replaces parameters and optimizer state one Tensor after
another (on numpy even in place, array by array; on xla it donates the old
buffers to XLA, so a reader holding them fails). A converted model called
from another thread at the same time could read half old, half new values.

Steps are writers: they run one at a time under one re-entrant lock, and
bump an epoch when they begin and when they end (odd: a write under way).
Calls that only read are optimistic, as a sequence lock's readers: they run
without the lock, and keep their result only when the epoch was even
before and is unchanged after; otherwise (a step ran meanwhile, whatever
it did to the reader: a torn read, an error from a donated buffer) they run
again holding the lock. A read therefore costs two loads and a compare
when no step runs beside it, and never waits on another reader (the
per-call path of a converted function inlines that check: `epoch`, then
`locked`).
"""
from __future__ import annotations

import threading

__all__ = ["StateLock", "STATE"]


class StateLock:
    """See the module doc: `write(fn, *args)` for steps, `read(fn, *args)` for calls."""

    def __init__(self):
        self._lock = threading.RLock()
        self.epoch = [0]
        self._depth = 0  # (only the holder of `_lock` changes it)

    def write(self, fn, *args):
        with self._lock:
            outer = not self._depth
            try:  # (the counts are kept right even when Ctrl-C lands between them)
                self._depth += 1
                if outer:
                    self.epoch[0] += 1
                return fn(*args)
            finally:
                if outer:
                    self._depth = 0
                    if self.epoch[0] & 1:
                        self.epoch[0] += 1
                else:
                    self._depth -= 1

    def read(self, fn, *args):
        epoch = self.epoch[0]
        if not epoch & 1:
            try:
                out = fn(*args)
            except Exception:
                if self.epoch[0] == epoch:
                    raise  # its own error, not a step's doing
            else:
                if self.epoch[0] == epoch:
                    return out
        return self.locked(fn, *args)

    def locked(self, fn, *args):
        """`fn(*args)` with no step running: a read that a step ran beside,
        once more (callers inlining `read`'s check come here)."""
        with self._lock:
            return fn(*args)


STATE = StateLock()
