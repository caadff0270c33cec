"""Compare d2s eager, d2s to_static and hand-written numpy on the same workloads.

    python benchmarks/compare_modes.py                      # full run (7 rounds)
    python benchmarks/compare_modes.py --quick --workloads W1,W5 --png ''
    python benchmarks/compare_modes.py --wide --targets     # every column, the goals

Each workload (benchmarks/workloads.py) is written once as d2s code and run
(a) eagerly (`d2s.jit.enable_to_static(False)`), (b) through `to_static`,
(c) as a hand-written numpy function; the results are checked equal before
any timing. Per mode: median time per call over several rounds of many calls
(calibrated so a round takes ~0.15 s), with the spread; ratios eager/static
and numpy/static; the first-call time of a fresh StaticFunction (convert,
trace, build, run). torch / jax columns are added when they import, and an
ONNX Runtime column (the program exported by `d2s.onnx`, run on one thread)
for the inference workloads when onnx and onnxruntime import. With torch, a
second table gives eager cost per op: each eager call's time over the number
of kernels it ran (counted once per workload), for d2s eager and for eager
PyTorch doing the same math.
Results go to a JSON file and, when matplotlib imports, a PNG bar chart.
Exit status 1 when a workload fails or disagrees between modes.

The printed report fits 100 columns: one row per workload with the times of
eager d2s, to_static and numpy (and to_static on xla) and the main ratios.
`--wide` prints every column (torch, jax, ONNX Runtime, spreads, first calls)
and the per-op table; `--targets` lists the project's speed goals, met or
not yet (they are goals to work towards, never asserted).
"""
import os
import sys

# Single-threaded BLAS for every mode, before numpy (or anything) is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
# Only `--flags`: XLA stops reading XLA_FLAGS at the first token that is not one.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Steady-state executables: the xla columns must time XLA, not the numpy tier
# serving calls while a background compile runs (benchmarks/xla_variable_lengths.py
# measures that tier on purpose).
os.environ.setdefault("D2S_XLA_SYNC", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)       # benchmark this checkout's d2s
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

import numpy as np  # noqa: E402

import d2s  # noqa: E402
from d2s.core.registry import OPS  # noqa: E402
from d2s.jit import enable_to_static  # noqa: E402

import onnx_runtime  # noqa: E402
import others  # noqa: E402
import timing  # noqa: E402
import xla_columns  # noqa: E402
from workloads import WORKLOADS, arrays  # noqa: E402

D2S_MODES = ("eager", "static", "numpy")
LABELS = {"eager": "eager d2s", "static": "to_static", "numpy": "numpy",
          onnx_runtime.COLUMN: "ONNX Runtime"}

# Targets (printed, not asserted).
NUMPY_RATIO_TARGET = {"W4": 0.95}          # numpy/static >= this; default 1.0
EAGER_RATIO_TARGET = 3.0                   # eager/static on these workloads:
EAGER_RATIO_WORKLOADS = ("W2", "W3", "W3b", "W5", "W6")
EAGER_RATIO_TARGET_FOR = {"W6": 2.0}       # (the whole training step: issue 10)
# Rows shown for comparison only (the forward-only converted training step,
# to see what converting the whole step gains): no target applies.
REFERENCE_ROWS = ("W6a",)
FIRST_CALL_TARGET_S = 20e-3
CACHE_HIT_TARGET_S = 10e-6
PER_OP_TORCH_MODE = "torch"                # eager d2s per op <= this column per op


# ---- modes ----------------------------------------------------------------------------------

@contextlib.contextmanager
def d2s_mode(static, no_grad):
    enable_to_static(static)
    try:
        with (d2s.no_grad() if no_grad else contextlib.nullcontext()):
            yield
    finally:
        enable_to_static(True)


def mode_table(wl, extra, columns=()):
    """{mode: (zero-arg fn, context factory)} for `timing.measure`."""
    modes = {
        "eager": (wl.call, lambda: d2s_mode(False, wl.no_grad)),
        "static": (wl.call, lambda: d2s_mode(True, wl.no_grad)),
        "numpy": (wl.numpy_call, contextlib.nullcontext),
    }
    for column in columns:
        modes[column.name] = column.mode(wl)
    for name, fn in extra.items():
        modes[name] = (fn, contextlib.nullcontext)
    return modes


# ---- column registry ----------------------------------------------------------------------
# More columns of the same d2s functions (another backend, say): each
# provides `name`, `label`, `headers`, `mode(wl)`, `first_calls(wl, repeats)`,
# `results(wl, arrays)`, `ratios(medians)`, `cells(entry)` and
# `targets(entries, verdict)`. Filled in by main().
COLUMNS = []


# ---- progress bar ---------------------------------------------------------------------------

class Progress:
    """One plain-text bar on stderr whose total, the number of workloads, is
    known before it starts; within a workload it advances by that workload's
    own steps (known once its columns are built), so the bar never goes back
    and the denominator never changes. Without a tty: one line per workload."""

    def __init__(self, n_workloads, width=28, stream=sys.stderr):
        self.total, self.width, self.stream = max(n_workloads, 1), width, stream
        self.index, self.steps, self.done = -1, 1, 0
        self.tty = stream.isatty()
        self.t0 = time.perf_counter()
        self.prefix = ""

    def start(self, prefix, steps=1):
        """Begin the next workload; `steps`: ticks it expects (see `expect`)."""
        self.index += 1
        self.prefix, self.steps, self.done = prefix, max(steps, 1), 0
        if not self.tty:
            self.stream.write(f"[{self.index + 1}/{self.total}] {prefix} "
                              f"({time.perf_counter() - self.t0:.1f} s)\n")
            self.stream.flush()
        else:
            self.tick("", n=0)

    def expect(self, steps):
        """The current workload's step count, once its columns are known."""
        self.steps = max(steps, 1)

    def tick(self, label="", n=1):
        self.done = min(self.steps, self.done + n)
        if not self.tty:
            return
        frac = (self.index + self.done / self.steps) / self.total
        filled = int(self.width * frac)
        bar = "#" * filled + "." * (self.width - filled)
        msg = f"\r[{bar}] {self.index + 1}/{self.total} {time.perf_counter() - self.t0:5.1f}s " \
              f"{self.prefix} {label}"
        self.stream.write(msg[:99].ljust(99))
        self.stream.flush()

    def close(self):
        if self.tty:
            self.stream.write("\r" + " " * 99 + "\r")
            self.stream.flush()


# ---- one workload -----------------------------------------------------------------------

def compare(ref, got, rtol, atol):
    """(equal, max abs difference) of two lists of arrays."""
    if len(got) > len(ref) or not got:
        return False, float("inf")
    worst = 0.0
    ok = True
    for a, b in zip(ref, got):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False, float("inf")
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        worst = max(worst, float(diff.max()) if diff.size else 0.0)
        ok = ok and bool(np.allclose(a, b, rtol=rtol, atol=atol))
    return ok, worst


def check_equal(wl, extra):
    """Run every mode twice from the same state; compare to the static result.
    torch / jax are compared with numpy on the outputs they return; returns
    ({mode: (equal, max abs diff)}, {torch/jax mode that raised: error})."""
    results = {}
    for mode in D2S_MODES:
        wl.reset()
        if mode == "numpy":
            wl.numpy_call()
            out = wl.numpy_call()
        else:
            with d2s_mode(mode == "static", wl.no_grad):
                wl.call()
                out = wl.call()
        results[mode] = arrays(out) + [np.array(a, copy=True) for a in wl.state(mode)]
    wl.reset()
    report = {}
    for mode in ("eager", "numpy"):
        report[mode] = compare(results["static"], results[mode], wl.rtol, wl.atol)
    failed = {}
    for name, fn in extra.items():
        try:
            fn()
            report[name] = compare(results["numpy"], arrays(fn()), 1e-3, 1e-4)
        except Exception as e:                 # noqa: BLE001 - optional columns
            failed[name] = f"{type(e).__name__}: {e}".splitlines()[0]
    return report, failed


def first_calls(wl, repeats):
    """(cold, [fresh...]) seconds: the first call of the workload's own
    StaticFunction in this process, then first calls of fresh wrappers."""
    with d2s_mode(True, wl.no_grad):
        cold, _ = timing.time_once(wl.call)
        wl.reset()
        fresh = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn = wl.fresh_call()
            fn()
            fresh.append(time.perf_counter() - t0)
            wl.reset()
    return cold, fresh


def eager_op_count(wl):
    """Kernels run by one eager call of the workload (backward and optimizer
    updates included): the denominator of the per-op figures. Counted by
    wrapping every registry kernel for that one call, never while timing."""
    count = [0]

    def counting(kernel):
        def run(*args, **kwargs):
            count[0] += 1
            return kernel(*args, **kwargs)
        return run

    kernels = {op: op.kernel for op in OPS.values()}
    try:
        for op, kernel in kernels.items():
            op.kernel = counting(kernel)
        wl.reset()
        with d2s_mode(False, wl.no_grad):
            wl.call()
    finally:
        for op, kernel in kernels.items():
            op.kernel = kernel
        wl.reset()
    return count[0]


def run_workload(key, seed, cfg, libs, progress, columns=()):
    progress.start(key)
    d2s.seed(seed)
    wl = WORKLOADS[key](np.random.default_rng(seed))
    entry = {"key": key, "title": wl.title, "info": wl.info, "no_grad": wl.no_grad}
    extra, extra_errors = others.modes_for(key, wl.np_args, libs) if libs else ({}, {})
    if cfg["onnx"]:
        try:
            extra.update(onnx_runtime.modes(wl))
        except Exception as e:                 # noqa: BLE001 - an optional column
            extra_errors[onnx_runtime.COLUMN] = f"{type(e).__name__}: {e}".splitlines()[0]
    if extra_errors:
        entry["other_errors"] = extra_errors
    progress.expect(2 + (len(D2S_MODES) + len(columns) + len(extra)) * (1 + cfg["rounds"]))

    cold, fresh = first_calls(wl, cfg["fresh_repeats"])
    entry["first_call_cold_s"] = cold
    entry["first_call_s"] = statistics.median(fresh)
    entry["first_call_fresh_s"] = fresh
    for column in columns:
        entry.update(column.first_calls(wl, cfg["fresh_repeats"]))
    progress.tick("first calls")

    eq, failed = check_equal(wl, extra)
    if failed:
        entry.setdefault("other_errors", {}).update(failed)
        extra = {m: fn for m, fn in extra.items() if m not in failed}
        progress.expect(progress.steps - len(failed) * (1 + cfg["rounds"]))
    entry["equal"] = all(ok for ok, _ in (eq["eager"], eq["numpy"]))
    entry["max_abs_diff"] = {m: d for m, (_, d) in eq.items()}
    entry["others_equal"] = {m: ok for m, (ok, _) in eq.items() if m in extra}
    if columns:
        wl.reset()
        with d2s_mode(True, wl.no_grad):
            wl.call()
            static = arrays(wl.call()) + [np.array(a, copy=True) for a in wl.state("static")]
        for column in columns:
            ok, diff = compare(static, column.results(wl, arrays), wl.rtol, wl.atol)
            entry["equal"] = entry["equal"] and ok
            entry["max_abs_diff"][column.name] = diff
    progress.tick("checked")

    stats = timing.measure(mode_table(wl, extra, columns), rounds=cfg["rounds"],
                           target_s=cfg["target_s"], warmup=cfg["warmup"],
                           max_calls=cfg["max_calls"], tick=progress.tick)
    wl.reset()
    entry["modes"] = {m: s.as_dict() for m, s in stats.items()}
    med = {m: s.median for m, s in stats.items()}
    entry["ratios"] = {"eager/static": med["eager"] / med["static"],
                       "numpy/static": med["numpy"] / med["static"]}
    for column in columns:
        entry["ratios"].update(column.ratios(med))
    entry["eager_ops"] = ops = eager_op_count(wl)
    entry["per_op_s"] = {m: med[m] / ops for m in ("eager", PER_OP_TORCH_MODE)
                         if m in med and ops}
    if ops:  # what eager d2s adds to hand-written numpy, per op (dispatch, Tensors, no in-place)
        entry["per_op_s"]["eager-numpy"] = (med["eager"] - med["numpy"]) / ops
    return entry


# ---- output -------------------------------------------------------------------------------

def fmt_time(s):
    if s is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= 0.9995 * scale:
            v = s / scale
            return f"{v:.3g} {unit}" if v < 99.95 else f"{v:.0f} {unit}"
    return f"{s / 1e-9:.0f} ns"


def fmt_signed_time(s):
    return "-" + fmt_time(-s) if s < 0 else fmt_time(s)


def fmt_cell(m):
    med = m["median_s"]
    if len(m["rounds_s"]) < 2:
        return fmt_time(med)
    spread = (m["max_s"] - m["min_s"]) / (2 * med) * 100 if med else 0.0
    return f"{fmt_time(med)} ±{spread:.0f}%"


def table(entries, mode_names):
    head = ["workload"] + [LABELS.get(m, m) for m in mode_names] + \
           ["eager/st", "np/st", "1st call", "cold"] + \
           [h for c in COLUMNS for h in c.headers] + ["equal"]
    rows = []
    for e in entries:
        if "error" in e:
            rows.append([f"{e['key']} {e.get('title', '')}", f"ERROR: {e['error']}"])
            continue
        cells = [f"{e['key']} {e['title']}"]
        for m in mode_names:
            cells.append(fmt_cell(e["modes"][m]) if m in e["modes"] else "-")
        cells += [f"{e['ratios']['eager/static']:.2f}x", f"{e['ratios']['numpy/static']:.2f}x",
                  fmt_time(e["first_call_s"]), fmt_time(e["first_call_cold_s"])]
        for column in COLUMNS:
            cells += column.cells(e)
        cells.append("yes" if e["equal"] else "NO")
        rows.append(cells)
    return _grid(head, rows)


WIDTH = 100   # the default report fits a terminal of this many columns


def say(text="", indent="  "):
    """Print `text` wrapped to WIDTH (continuation lines indented)."""
    for para in text.split("\n"):
        print(textwrap.fill(para, WIDTH, subsequent_indent=indent, break_on_hyphens=False)
              if para else "")


def _grid(head, rows):
    """Columns: the first left-aligned, the others right-aligned; rows that are
    not full (an error) are written as key + text."""
    width = [max(len(r[i]) for r in [head] + rows if len(r) == len(head))
             for i in range(len(head))]
    lines = []
    for r in [head] + rows:
        if len(r) != len(head):
            lines.append(f"{r[0].ljust(width[0])}  {r[1]}")
            continue
        lines.append("  ".join(c.ljust(width[0]) if i == 0 else c.rjust(width[i])
                               for i, c in enumerate(r)))
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def compact_table(entries):
    """The default table (fits WIDTH): per workload, the median time per call
    of eager d2s, to_static and numpy (and to_static on xla when measured),
    the main ratios, the first call and whether the modes agree."""
    xla = any(xla_columns.NAME in e.get("modes", {}) for e in entries)
    head = ["workload", "eager d2s", "to_static", "numpy"] + (["xla"] if xla else []) + \
           ["eager/st", "np/st"] + (["np/xla"] if xla else []) + ["1st call", "equal"]
    rows = []
    for e in entries:
        if "error" in e:
            rows.append([e["key"], f"ERROR: {e['error']}"[:WIDTH - 8]])
            continue
        modes = ["eager", "static", "numpy"] + ([xla_columns.NAME] if xla else [])
        cells = [e["key"]] + [fmt_time(e["modes"][m]["median_s"]) if m in e["modes"] else "-"
                              for m in modes]
        r = e["ratios"]
        cells += [f"{r['eager/static']:.2f}x", f"{r['numpy/static']:.2f}x"]
        if xla:
            cells.append(f"{r['np/xla']:.2f}x" if "np/xla" in r else "-")
        cells += [fmt_time(e["first_call_s"]), "yes" if e["equal"] else "NO"]
        rows.append(cells)
    return _grid(head, rows)


def legend(entries, wide):
    """What the rows and the ratio columns are, a line each."""
    lines = ["workloads:"]
    lines += [f"  {e['key']:4s} {e.get('title', '')}" for e in entries]
    lines.append("ratios: a time over to_static's time (eager/st 2.00x: to_static is twice as "
                 "fast as eager d2s; np/st below 1: hand-written numpy is faster)")
    if any(xla_columns.NAME in e.get("modes", {}) for e in entries):
        lines.append("xla: the same to_static function on the xla backend; np/xla: numpy time "
                     "over its time")
    lines.append("1st call: a fresh to_static function's first call (convert, trace, build, "
                 "run)")
    if not wide:
        lines.append("more: --wide (every column: torch, jax, ONNX Runtime, spreads; eager cost "
                     "per op), --targets (the project's speed goals)")
    return "\n".join(lines)


def per_op_table(entries):
    """Eager cost per op: d2s eager and eager PyTorch (same math), or None
    when no workload has a torch column."""
    rows = [e for e in entries if "error" not in e and PER_OP_TORCH_MODE in e.get("per_op_s", {})]
    if not rows:
        return None
    lines = [f"{'workload':<10}{'ops/call':>9}{'eager d2s/op':>14}{'torch/op':>11}{'d2s/torch':>11}"
             f"{'d2s over numpy/op':>19}"]
    for e in rows:
        d, t = e["per_op_s"]["eager"], e["per_op_s"][PER_OP_TORCH_MODE]
        lines.append(f"{e['key']:<10}{e['eager_ops']:>9}{fmt_time(d):>14}{fmt_time(t):>11}"
                     f"{d / t:>10.2f}x{fmt_signed_time(e['per_op_s']['eager-numpy']):>19}")
    return "\n".join(lines)


def targets(entries, cache_hit):
    out = []
    ok = [e for e in entries if "error" not in e and e["key"] != "ADD"
          and e["key"] not in REFERENCE_ROWS]

    def verdict(name, items, why=""):
        met = [k for k, v, good in items if good]
        missed = [f"{k} ({v})" for k, v, good in items if not good]
        out.append({"target": name, "why": why, "met": not missed and bool(items),
                    "met_on": met, "missed_on": missed})

    verdict("numpy/static >= 1.0 (W4 >= 0.95)",
            [(e["key"], f"{e['ratios']['numpy/static']:.2f}",
              e["ratios"]["numpy/static"] >= NUMPY_RATIO_TARGET.get(e["key"], 1.0)) for e in ok],
            "a converted function runs as fast as the same model written by hand in numpy")
    special = ", ".join(f"{k} >= {v:g}" for k, v in EAGER_RATIO_TARGET_FOR.items())
    verdict(f"eager/static >= {EAGER_RATIO_TARGET:g} on {','.join(EAGER_RATIO_WORKLOADS)} "
            f"({special})",
            [(e["key"], f"{e['ratios']['eager/static']:.2f}",
              e["ratios"]["eager/static"] >= EAGER_RATIO_TARGET_FOR.get(e["key"],
                                                                       EAGER_RATIO_TARGET))
             for e in ok if e["key"] in EAGER_RATIO_WORKLOADS],
            "converting pays: where eager's per-op cost dominates (loops, small ops), "
            "to_static is several times faster")
    def first(e, key):
        run = e["modes"]["static"]["median_s"]
        return f"{fmt_time(e[key])}, of which a cached call takes {fmt_time(run)}"
    per_op = [e for e in ok if PER_OP_TORCH_MODE in e.get("per_op_s", {})]
    if per_op:
        verdict("eager d2s per op <= eager torch per op",
                [(e["key"], f"{e['per_op_s']['eager'] / e['per_op_s'][PER_OP_TORCH_MODE]:.2f}",
                  e["per_op_s"]["eager"] <= e["per_op_s"][PER_OP_TORCH_MODE]) for e in per_op],
                "d2s's eager mode costs no more per op than eager PyTorch doing the same math")
    verdict(f"first call of a fresh StaticFunction <= {FIRST_CALL_TARGET_S * 1e3:g} ms",
            [(e["key"], first(e, "first_call_s"), e["first_call_s"] <= FIRST_CALL_TARGET_S)
             for e in entries if "error" not in e],
            "the first call of a converted function (trace, build, run) is not a wait")
    verdict(f"cold first call (incl. source conversion) <= {FIRST_CALL_TARGET_S * 1e3:g} ms",
            [(e["key"], first(e, "first_call_cold_s"),
              e["first_call_cold_s"] <= FIRST_CALL_TARGET_S)
             for e in entries if "error" not in e],
            "the same, with the function's source converted first (its first call in a process)")
    if cache_hit is not None:
        verdict(f"cache-hit overhead <= {CACHE_HIT_TARGET_S * 1e6:g} µs",
                [("ADD", fmt_time(cache_hit["overhead_s"]),
                  cache_hit["overhead_s"] <= CACHE_HIT_TARGET_S)],
                "calling a converted function adds little to running its program")
    for column in COLUMNS:
        column.targets(ok, verdict)
    return out


def print_targets(results):
    say("\ntargets: the project's speed goals, measured and never asserted (\"not yet\" is "
        "work to do, not a failed run)")
    for t in results:
        status = "met" if t["met"] else "not yet" if t["met_on"] or t["missed_on"] else "n/a"
        say(f"  [{status:7s}] {t['target']}", indent="            ")
        if t.get("why"):
            say(f"            {t['why']}", indent="            ")
        on = []
        if t["met_on"]:
            on.append(f"met on {', '.join(t['met_on'])}")
        if t["missed_on"]:
            on.append(f"not yet on {', '.join(t['missed_on'])}")
        if on:
            say(f"            {'; '.join(on)}", indent="            ")


def chart(entries, mode_names, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no PNG: matplotlib is not importable; pip install -e '.[bench]' to get it)")
        return False
    ok = [e for e in entries if "error" not in e]
    if not ok:
        return False
    fig, (ax, rel) = plt.subplots(2, 1, figsize=(max(8, 1.3 * len(ok)) + 2, 9), sharex=True)
    width = 0.8 / len(mode_names)
    for i, m in enumerate(mode_names):
        xs, ys, lo, hi, ratio = [], [], [], [], []
        for j, e in enumerate(ok):
            if m in e["modes"]:
                s = e["modes"][m]
                xs.append(j + (i - (len(mode_names) - 1) / 2) * width)
                ys.append(s["median_s"] * 1e6)
                lo.append((s["median_s"] - s["min_s"]) * 1e6)
                hi.append((s["max_s"] - s["median_s"]) * 1e6)
                ratio.append(s["median_s"] / e["modes"]["static"]["median_s"])
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=LABELS.get(m, m))
        rel.bar(xs, ratio, width, label=LABELS.get(m, m))
    labels = [e["key"] + "\n" + textwrap.fill(e.get("title", ""), 18) for e in ok]
    for a in (ax, rel):
        a.set_xticks(range(len(ok)))
        a.set_yscale("log")
        a.grid(axis="y", which="major", alpha=0.3)
    rel.set_xticklabels(labels, fontsize=7.5)
    ax.set_ylabel("µs per call (median; whiskers: min-max)")
    ax.set_title("time per call (lower is better)")
    rel.axhline(1.0, color="k", lw=0.8)
    # Labels only on a few round values (1-2-5 steps) inside the data's range:
    # a log axis labelling its minor ticks writes them on top of each other.
    from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullFormatter
    lo, hi = rel.get_ylim()
    for steps in ((1, 2, 5), (1, 5), (1,)):
        shown = [m * 10.0 ** k for k in range(-4, 5) for m in steps if lo <= m * 10.0 ** k <= hi]
        if len(shown) <= 9:
            break
    rel.yaxis.set_major_locator(FixedLocator(shown))
    rel.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    rel.yaxis.set_minor_formatter(NullFormatter())
    rel.set_ylabel("time / to_static time")
    rel.set_title("relative to to_static (above 1: slower than to_static; below 1: faster)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.suptitle("d2s compare_modes: eager d2s vs to_static vs hand-written numpy"
                 " (and peers)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def meta(cfg, libs):
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except Exception:                                   # noqa: BLE001
            return None
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                       None)
    except OSError:
        pass
    status = git("status", "--porcelain", "--", "d2s")
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(), "numpy": np.__version__,
        "platform": platform.platform(), "cpu": cpu, "cpu_count": os.cpu_count(),
        "git_commit": git("rev-parse", "HEAD"), "d2s_dirty": bool(status) if status is not None
        else None,
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                               "MKL_NUM_THREADS", "OPENBLAS_CORETYPE")},
        "config": cfg, "other_libraries": libs,
    }


# ---- main ---------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(
        description="\n\n".join(__doc__.split("\n\n")[i] for i in (0, 1, 3)),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="1 round, few calls (CI smoke run; the numbers are rough)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per mode (default 7)")
    parser.add_argument("--round-time", type=float, default=None,
                        help="seconds per round (default 0.15)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"comma-separated subset of {','.join(WORKLOADS)}")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "compare_modes.json"),
                        help="where to write every figure as JSON; '' for none "
                             "(default: benchmarks/results/compare_modes.json)")
    parser.add_argument("--png", default=os.path.join(HERE, "results", "compare_modes.png"),
                        help="bar chart path; '' for none")
    parser.add_argument("--no-others", action="store_true",
                        help="skip the torch / jax / ONNX Runtime columns")
    parser.add_argument("--others", default=None,
                        help="comma-separated subset of torch,jax,onnx: the optional columns "
                             "to add (default: every one that imports)")
    parser.add_argument("--no-xla", action="store_true",
                        help="skip the to_static xla column (default: on when jax imports)")
    parser.add_argument("--xla-persistent", action="store_true",
                        help="also time the xla first call of two fresh processes sharing "
                             "a D2S_CACHE_DIR")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the workloads' data and weights (default 0)")
    parser.add_argument("--wide", action="store_true",
                        help="print every column (torch, jax, ONNX Runtime, spreads, first "
                             "calls) and the eager cost per op; wider than 100 columns")
    parser.add_argument("--targets", action="store_true",
                        help="list the project's speed goals, each met or not yet")
    args = parser.parse_args(argv)
    try:                        # never fail on a terminal that cannot show µ or ±
        sys.stdout.reconfigure(errors="replace")
    except (AttributeError, ValueError):
        pass

    keys = [k.strip() for k in args.workloads.split(",") if k.strip()]
    unknown = [k for k in keys if k not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    cfg = ({"rounds": 1, "target_s": 0.005, "warmup": 1, "max_calls": 20, "fresh_repeats": 1}
           if args.quick else
           {"rounds": 7, "target_s": 0.15, "warmup": 3, "max_calls": 1_000_000,
            "fresh_repeats": 5})
    if args.rounds is not None:
        cfg["rounds"] = max(1, args.rounds)
    if args.round_time is not None:
        cfg["target_s"] = args.round_time
    cfg["quick"] = args.quick
    wanted = None if args.others is None else set(args.others.split(","))
    cfg["onnx"] = (not args.no_others and onnx_runtime.available()
                   and (wanted is None or "onnx" in wanted))
    libs = [] if args.no_others else others.available()
    if wanted is not None:
        libs = [lib for lib in libs if lib in wanted]
    COLUMNS.clear()
    if not args.no_xla and xla_columns.available():
        COLUMNS.append(xla_columns.XlaColumn(d2s_mode))
        LABELS[xla_columns.NAME] = xla_columns.LABEL

    t_start = time.perf_counter()
    # Warm the converter itself (its lazy imports) so W1's cold call measures W1.
    with d2s_mode(True, True):
        d2s.jit.to_static(lambda_free_warmup)(d2s.ones([2]))

    progress = Progress(len(keys))
    entries = []
    for key in keys:
        seed = args.seed + list(WORKLOADS).index(key)
        try:
            entries.append(run_workload(key, seed, cfg, libs, progress, COLUMNS))
        except Exception as e:                              # noqa: BLE001 - report, go on
            tb = traceback.format_exc()
            entries.append({"key": key, "error": f"{type(e).__name__}: {e}".splitlines()[0],
                            "traceback": tb})
            progress.tick("failed", n=progress.steps)
    progress.close()
    wall = time.perf_counter() - t_start

    mode_names = list(D2S_MODES)
    for e in entries:
        for m in e.get("modes", {}):
            if m not in mode_names:
                mode_names.append(m)
    table_entries = [e for e in entries if e["key"] != "ADD" or "error" in e]
    if args.wide:
        print(f"d2s compare_modes: {len(keys)} workloads, {cfg['rounds']} round(s) of "
              f"~{cfg['target_s'] * 1e3:g} ms per mode; median per call ±half the min-max "
              f"spread")
        print(table(table_entries, mode_names))
    else:
        say(f"d2s compare_modes: {len(keys)} workloads, {cfg['rounds']} round(s) of "
            f"~{cfg['target_s'] * 1e3:g} ms per mode; median time per call")
        print(compact_table(table_entries))
    print()
    say(legend(table_entries, args.wide), indent="    ")
    per_op = per_op_table(entries) if args.wide else None
    if per_op:
        print("\neager cost per op (time per call / kernels run per call; torch: the same math):")
        print(per_op)

    cache_hit = None
    add = next((e for e in entries if e["key"] == "ADD" and "error" not in e), None)
    if add is not None:
        st, npy = add["modes"]["static"]["median_s"], add["modes"]["numpy"]["median_s"]
        cache_hit = {"static_s": st, "numpy_s": npy, "overhead_s": st - npy,
                     "eager_s": add["modes"]["eager"]["median_s"],
                     "first_call_s": add["first_call_s"], "equal": add["equal"]}
        say(f"\ncache hit of a one-add function ([16] float32): to_static {fmt_time(st)} "
            f"- numpy add {fmt_time(npy)} = overhead {fmt_time(st - npy)} per call "
            f"(eager d2s {fmt_time(cache_hit['eager_s'])}; first call "
            f"{fmt_time(add['first_call_s'])})")
    for e in entries:
        if "error" in e:
            print(f"\n{e['key']} failed:\n{e['traceback']}")
        elif not e["equal"]:
            say(f"\n{e['key']}: modes disagree; max |difference| vs to_static: "
                f"{e['max_abs_diff']}")
        if e.get("other_errors"):
            say(f"{e['key']}: skipped columns: {e['other_errors']}")
        for m, ok in (e.get("others_equal") or {}).items():
            if not ok:
                say(f"{e['key']}: {m} result differs from numpy "
                    f"(max |diff| {e['max_abs_diff'][m]:.3g})")
    tg = targets(entries, cache_hit)
    if args.targets:
        print_targets(tg)
    persistent = None
    if args.xla_persistent and COLUMNS:
        measured = [e["key"] for e in entries if "error" not in e]
        persistent = xla_columns.persistent_first_calls(measured, HERE, ROOT)
        xla_columns.print_persistent(persistent, fmt_time)
    if args.quick:
        print("(--quick: one short round; the numbers are rough)")

    result = {"meta": meta(cfg, libs), "workloads": {e["key"]: e for e in entries},
              "cache_hit": cache_hit, "targets": tg, "wall_s": wall,
              "xla_persistent_first_calls": persistent}
    result["meta"]["wall_s"] = wall
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=_json_default)
        print(f"\nJSON: {args.json}")
    if args.png:
        if chart(entries, mode_names, args.png):
            print(f"PNG: {args.png}")
    print(f"wall time: {wall:.1f} s")
    failed = [e["key"] for e in entries if "error" in e or not e["equal"]]
    return 1 if failed else 0


def lambda_free_warmup(x):
    return x + 1.0


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.bool_,)):
        return bool(o)
    return str(o)


if __name__ == "__main__":
    sys.exit(main())
