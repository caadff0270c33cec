"""Tiering on the numpy backend: the once-decided choice between generated
code and the reference interpreter for one part of a program (`Plan`,
`_Compiled`), made on the part's second call (`_Compiled.when_hot`)."""
from __future__ import annotations

import enum

from ...static.executor import interpreted_calls


class Plan(enum.Enum):
    """How a part of the program runs; decided on first use."""
    UNDECIDED = "undecided"
    COMPILED = "compiled"        # generated Python (backends/numpy/codegen.py)
    INTERPRETED = "interpreted"  # the op-by-op reference executor


class _Compiled:
    """A compiled function decided once (under a lock) on first use: `plan` is
    COMPILED with `fn` set, or INTERPRETED when the program cannot be compiled.

    `when_hot` tiers the decision (see `executor.interpreted_calls`): the
    first calls run on the reference interpreter (`fn` None, plan still
    UNDECIDED) and the part is compiled when called again. A function
    called once (a script's setup, a test) never pays for generating and
    compiling its code, which on a large program costs more than
    interpreting it once; one called in a loop is compiled on its second
    call. `calls` is counted without the lock: two threads racing on it at
    worst interpret one call more, and both paths give the same values."""
    __slots__ = ("plan", "fn", "calls")

    def __init__(self):
        self.plan = Plan.UNDECIDED
        self.fn = None
        self.calls = 0

    def decide(self, lock, build):
        if self.plan is Plan.UNDECIDED:
            with lock:
                if self.plan is Plan.UNDECIDED:
                    fn = build()
                    self.fn = fn  # set before the plan: readers of COMPILED find it
                    self.plan = Plan.INTERPRETED if fn is None else Plan.COMPILED
        return self.fn

    def when_hot(self, lock, build):
        """`decide`, once this part has run `interpreted_calls()` times on the
        interpreter; None (interpret this call) before that."""
        if self.plan is Plan.UNDECIDED and self.calls < interpreted_calls():
            self.calls += 1
            return None
        return self.decide(lock, build)
