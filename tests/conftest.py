"""Shared by every test directory: the fuzz tests' program counts in the summary."""
import fuzz_stats


def pytest_terminal_summary(terminalreporter):
    counts = fuzz_stats.counts()
    if not counts:
        return
    terminalreporter.section("generated programs")
    for generator, n in sorted(counts.items()):
        terminalreporter.write_line(f"{generator}: {n} programs checked")
    terminalreporter.write_line(f"total: {sum(counts.values())} generated programs, "
                                f"seed {fuzz_stats.seed()} (replay: D2S_FUZZ_SEED="
                                f"{fuzz_stats.seed()})")
