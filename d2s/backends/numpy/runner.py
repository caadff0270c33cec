"""`d2s.static.Executor`'s programs on the numpy backend: one (program,
feeds, fetches) compiled once into generated Python (`codegen`) and rerun
from that; programs the generator does not handle, and
`set_executor_mode("interpreter")`, run op by op on the reference
interpreter (`static.executor`)."""
from __future__ import annotations

import numpy as np

from ...static.executor import Scope, check_fed, executor_mode, run_block, write_back
from .codegen import NotCompilable, compile_program


class Runner:
    """How one (program, feeds, fetches) runs on numpy."""

    def __init__(self, program, feed_names, fetch_names):
        self.program = program
        self.feed_names = tuple(feed_names)
        self.fetch_names = list(fetch_names)

    def run(self, feeds, feed_attrs=None):
        """Fetched values for the fed arrays (in `feed_names` order)."""
        program, fetch_names = self.program, self.fetch_names
        compiled = _compiled_for(program, self.feed_names, tuple(fetch_names))
        if compiled is not None:
            fn, written = compiled
            params = [t._value for t in program.captured.values()]
            results = fn(*feeds, *params)
            n = len(fetch_names)
            for name, value in zip(written, results[n:]):
                program.captured[name]._value = np.asarray(value)
            return [np.asarray(r) for r in results[:n]]
        scope = Scope()
        scope.vars.update(zip(self.feed_names, feeds))
        for name, tensor in program.captured.items():
            scope.vars[name] = tensor._value
        run_block(program.global_block(), scope)
        write_back(program, scope)
        return [scope.get(n) for n in fetch_names]

    def output_attrs(self, feeds, feed_attrs=None):
        """Per fetch, its placements: metadata on numpy (the fetched Variables')."""
        return None

    def text(self, feeds=None, feed_attrs=None):
        """The generated Python for these feeds and fetches."""
        program = self.program
        gb = program.global_block()
        return compile_program(program, gb.ops, list(self.feed_names) + list(program.captured),
                               self.fetch_names, "executor").source


def _compiled_for(program, feed_names, fetch_names):
    """(compiled function, captured names it writes) or None (interpret)."""
    if executor_mode() != "compiled":
        return None
    version = (len(program.blocks), sum(len(b.ops) for b in program.blocks))
    cache = program.__dict__.setdefault("_compiled", {})
    key = (version, feed_names, fetch_names)
    if key not in cache:
        gb = program.global_block()
        check_fed(program, program.all_ops(), feed_names)
        written = sorted({v.name for op in gb.ops for v in op.outputs
                          if v.name in program.captured})
        try:
            fn = compile_program(program, gb.ops, list(feed_names) + list(program.captured),
                                 list(fetch_names) + written, "executor")
            cache[key] = (fn, written)
        except NotCompilable:
            cache[key] = None
    return cache[key]
