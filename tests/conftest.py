"""Suite-wide setup: conversions are cached in a temporary folder, never the
user's; programs are compiled on their first call; the fuzz tests' program
counts in the run summary.

Set before any test runs (subprocesses inherit it); tests of the cache
itself point `D2S_CACHE_DIR` at folders of their own.
"""
import os
import shutil
import tempfile

import fuzz_stats

_CACHE = tempfile.mkdtemp(prefix="d2s-test-cache-")
os.environ["D2S_CACHE_DIR"] = _CACHE
# Programs are compiled on their first call here (users' default interprets
# it, `executor.interpreted_calls`): most tests call a function once, and the
# suite exists to check the generated code against eager (the interpreter has
# its own run, D2S_EXECUTOR=interpreter). `D2S_INTERPRETED_CALLS=1 pytest`
# runs the suite tiered, as users get it; tests/jit/test_tiered_first_call.py
# checks the tiering itself.
os.environ.setdefault("D2S_INTERPRETED_CALLS", "0")


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    counts = fuzz_stats.counts()
    if not counts:
        return
    terminalreporter.section("generated programs")
    for generator, n in sorted(counts.items()):
        terminalreporter.write_line(f"{generator}: {n} programs checked")
    seed = fuzz_stats.seed()
    terminalreporter.write_line(f"generated programs this run: {sum(counts.values())} "
                                f"(seed {seed}; replay with D2S_FUZZ_SEED={seed})")
