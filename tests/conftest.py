"""Suite-wide setup: conversions are cached in a temporary folder, never the
user's; programs are compiled on their first call; the fuzz tests' program
counts in the run summary (when a test failed, or asked for with -v or -rA).

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
# Likewise xla compiles on the calling thread here (users' default runs a
# shape's first calls on numpy while XLA compiles it in the background):
# the xla suites check XLA's results from the first call on.
# tests/backends/xla/test_background_compile.py checks the tiers themselves.
os.environ.setdefault("D2S_XLA_SYNC", "1")


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)


def pytest_terminal_summary(terminalreporter, config):
    """The fuzz tests' program counts and seed: shown when a test failed (the
    seed replays the run), with -v, or with a -rA / -rP summary; a passing run
    stays quiet."""
    counts = fuzz_stats.counts()
    failed = terminalreporter.stats.get("failed") or terminalreporter.stats.get("error")
    # (pyproject's addopts has -q: verbosity -1; -v makes it 0)
    asked = (config.getoption("verbose") >= 0
             or set(config.getoption("reportchars") or "") & set("AP"))
    if not counts or not (failed or asked):
        return
    terminalreporter.section("generated programs")
    for generator, n in sorted(counts.items()):
        terminalreporter.write_line(f"{generator}: {n} programs checked")
    seed = fuzz_stats.seed()
    terminalreporter.write_line(f"generated programs this run: {sum(counts.values())} "
                                f"(seed {seed}; replay with D2S_FUZZ_SEED={seed})")
