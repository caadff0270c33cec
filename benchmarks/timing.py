"""Calibrated timing: many calls per round, several rounds, median per call.

`measure` interleaves the modes round by round (round 1 of every mode, then
round 2, ...), so slow drift of the machine (frequency, other load) falls on
all modes alike instead of on whichever ran last.
"""
from __future__ import annotations

import contextlib
import gc
import math
import statistics
import time
from dataclasses import dataclass, field

_clock = time.perf_counter


def time_calls(fn, n):
    """Seconds per call of `fn()` over `n` back-to-back calls."""
    t0 = _clock()
    for _ in range(n):
        fn()
    return (_clock() - t0) / n


def calibrate(fn, target_s, max_calls=1_000_000):
    """Calls per round so that one round takes about `target_s` (at least 1)."""
    n = 1
    while True:
        dt = time_calls(fn, n) * n
        if dt >= target_s / 5 or n >= max_calls:
            break
        n = min(max_calls, n * (10 if dt < target_s / 100 else 2))
    per_call = max(dt / n, 1e-9)
    return max(1, min(max_calls, int(math.ceil(target_s / per_call))))


@dataclass
class Stats:
    calls: int                      # calls per round
    rounds: list = field(default_factory=list)  # seconds per call, one per round

    @property
    def median(self):
        return statistics.median(self.rounds)

    def as_dict(self):
        r = sorted(self.rounds)
        if len(r) >= 4:
            q1, _, q3 = statistics.quantiles(r, n=4, method="inclusive")
        else:
            q1, q3 = r[0], r[-1]
        return {"median_s": self.median, "min_s": r[0], "max_s": r[-1],
                "q1_s": q1, "q3_s": q3, "calls_per_round": self.calls,
                "rounds_s": list(self.rounds)}


def measure(modes, rounds=7, target_s=0.15, warmup=3, max_calls=1_000_000, tick=None):
    """Time each mode. `modes`: {name: (fn, context)} where `context()` returns
    a context manager entered around that mode's warm-up, calibration and
    rounds (the to_static switch, no_grad). `tick(label)` is called after each
    step, for a progress bar. Returns {name: Stats}."""
    tick = tick or (lambda label: None)
    stats = {}
    for name, (fn, context) in modes.items():
        with context():
            for _ in range(warmup):
                fn()
            stats[name] = Stats(calibrate(fn, target_s, max_calls))
        tick(f"{name} calibrated ({stats[name].calls} calls/round)")
    for r in range(rounds):
        for name, (fn, context) in modes.items():
            gc.collect()
            with context():
                stats[name].rounds.append(time_calls(fn, stats[name].calls))
            tick(f"{name} round {r + 1}/{rounds}")
    return stats


def time_once(fn):
    """Wall time of one call (seconds) and its result."""
    t0 = _clock()
    out = fn()
    return _clock() - t0, out


null_context = contextlib.nullcontext
