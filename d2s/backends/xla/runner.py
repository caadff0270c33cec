"""The entry `d2s.static.Executor` uses: run a program on XLA, or on numpy.

A program (with its feeds and fetches) that cannot lower — an op without an
XLA form, or a use of one found while tracing (a bool mask, a loop value
that grows) — runs on the numpy backend from then on, after one
`BackendFallbackWarning` naming the op, the user's file and line (the
registry's policy: `d2s.backends.warn_fallback`).
"""
from __future__ import annotations

import threading

from ... import backends as registry
from ...static.executor import check_fed
from .errors import RaisesOnNumpy, Unsupported
from .program import XlaProgram


class Lowered:
    """An `XlaProgram` built by `build()`, or — once the program turned out
    not to lower, when building or when tracing for some shape — the reason,
    after one warning; from then on every call takes the numpy fallback.
    (`xla` is None exactly when it fell back.)"""

    def __init__(self, build):
        self.xla = None
        self.reason = None
        try:
            self.xla = build()
        except Unsupported as e:
            self.fall_back(e)

    def fall_back(self, e):
        self.xla = None
        self.reason = registry.warn_fallback("xla", e)

    def call(self, use, numpy_fallback):
        """`use(xla_program)`, or `numpy_fallback()` when the program does not
        lower, or for this call when a kernel's check failed (`RaisesOnNumpy`:
        numpy raises its error)."""
        xla = self.xla
        if xla is not None:
            try:
                return use(xla)
            except Unsupported as e:
                self.fall_back(e)
            except RaisesOnNumpy:
                pass
        return numpy_fallback()

    def lowered_text(self, feeds, **kwargs):
        def fail():
            raise ValueError(f"no StableHLO: {self.reason}")
        return self.call(lambda xla: xla.lowered_text(feeds, **kwargs), fail)


class Runner(Lowered):
    """How one (program, feeds, fetches) runs: on XLA, or on numpy after a warning."""

    def __init__(self, program, feed_names, fetch_names):
        check_fed(program, program.all_ops(), feed_names)  # the numpy backend's error
        self.fetch_names = list(fetch_names)
        self._numpy = registry.get(registry.FALLBACK).runner(program, feed_names, fetch_names)
        super().__init__(lambda: XlaProgram(program, feed_names, fetch_names))

    def run(self, feeds, feed_attrs=None):
        """Fetched arrays. `feed_attrs`: per feed its placements (a DistAttr) or
        None — the seam through which sharded inputs reach XLA."""
        return self.call(lambda xla: xla(feeds, feed_attrs=feed_attrs),
                         lambda: self._numpy.run(feeds))

    def text(self, feeds, feed_attrs=None):
        """The StableHLO for these feeds' shapes."""
        return self.lowered_text(feeds, feed_attrs=feed_attrs)

    def output_attrs(self, feeds, feed_attrs=None):
        """Per fetch, the placements the program gave it (None where unsharded,
        and everywhere on the numpy fallback: placements are metadata there)."""
        return self.call(lambda xla: xla.output_attrs(feeds, feed_attrs),
                         lambda: [None] * len(self.fetch_names))


def fallback_message(e):
    """The fallback warning's text (see `d2s.backends.fallback_message`)."""
    return registry.fallback_message("xla", e)


_lock = threading.Lock()


def runner_for(program, feed_names, fetch_names):
    """The cached Runner of (program, feeds, fetches); programs that grow get new ones."""
    version = (len(program.blocks), sum(len(b.ops) for b in program.blocks))
    cache = program.__dict__.setdefault("_xla_runners", {})
    key = (version, tuple(feed_names), tuple(fetch_names))
    runner = cache.get(key)
    if runner is None:
        with _lock:
            runner = cache.get(key)
            if runner is None:
                runner = cache[key] = Runner(program, feed_names, fetch_names)
    return runner
