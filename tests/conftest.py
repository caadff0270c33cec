"""Shared by every test directory: the fuzz tests' program counts in the summary."""
import fuzz_stats


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
