"""First-call cost of `to_static` as a new user meets it, by function size.

    python benchmarks/first_call.py                 # 40/160/640/2,560 lines, 5 repeats
    python benchmarks/first_call.py --quick         # 40/160 lines, 1 repeat (smoke run)
    python benchmarks/first_call.py --d2s /path/to/other/checkout   # measure another d2s

A generated function of N blocks (each an `if` and a `while` on tensors, 8
source lines) is written to a file, and each measurement runs in a fresh
Python process that imports d2s and that file, then times

* conversion: `d2s.convert.convert_function(fn)` (source -> converted function),
* trace: the first call of `to_static(fn)` after it (trace, passes, compile, run),

so first call = conversion + trace, and then the *second call* (the same
input again: on the default tiered executor the first call's run is
interpreted and the second compiles the program's code, see
`d2s.static.executor.interpreted_calls`), in CPU time of the process by default
(`--clock wall` for elapsed time; on an idle machine they agree).  d2s's own
bytecode is cached as in any installation (one untimed run first).  Per
repeat there are two processes on one fresh, empty `D2S_CACHE_DIR`: the
*cold* one (nothing cached) and a *second process* (the persistent
conversion cache, when the d2s under test has one, holds the first
process's conversion).  Each child checks its static result against the
eager function on the same input, and counts the conversions it ran.

Figures are medians over repeats; the machine's noise is large on shared
cores, so compare runs side by side.  Results go to
`benchmarks/results/first_call.json` and, where matplotlib imports, a PNG.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

FULL_BLOCKS = (5, 20, 80, 320)   # 43, 163, 643, 2,563 source lines
QUICK_BLOCKS = (5, 20)
LINES_PER_BLOCK = 8

_BLOCK = """\
    if x.sum() > {k}.5:
        x = x * 0.5
    else:
        x = x + 1.0
    n = d2s.zeros([], "int64")
    while n < 2:
        x = x + 0.{k1}
        n = n + 1
"""


def generated_source(blocks):
    """A module defining `generated(x)`: a docstring line, `blocks` blocks, a return."""
    body = "".join(_BLOCK.format(k=k % 7, k1=k % 9 + 1) for k in range(blocks))
    return ("import d2s\n\n\n"
            f"def generated(x):\n    \"\"\"{blocks} blocks of if + while on tensors.\"\"\"\n"
            f"{body}    return x\n")


def function_lines(blocks):
    return LINES_PER_BLOCK * blocks + 3


# ---- child: one measurement in a fresh process --------------------------------------------

def child(module_path):
    """Import d2s and the generated module, time conversion and the first call."""
    import importlib.util

    import numpy as np

    import d2s
    from d2s.convert import api, convert_function

    conversions = []
    convert_tree = api.convert_tree

    def counting(*args, **kwargs):
        conversions.append(1)
        return convert_tree(*args, **kwargs)
    api.convert_tree = counting

    spec = importlib.util.spec_from_file_location("d2s_first_call_generated", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = module.generated
    x = d2s.to_tensor(np.linspace(-1.0, 1.0, 4).astype("float32"))

    static = d2s.jit.to_static(fn)
    c0, t0 = time.process_time(), time.perf_counter()
    convert_function(fn)
    c1, t1 = time.process_time(), time.perf_counter()
    out = static(x)
    c2, t2 = time.process_time(), time.perf_counter()
    again = static(x)
    c3, t3 = time.process_time(), time.perf_counter()

    expected = fn(x).numpy()
    for result in (out, again):
        if not np.allclose(result.numpy(), expected, rtol=1e-5, atol=1e-6):
            raise SystemExit(f"static result {result.numpy()} != eager {expected}")
    print(json.dumps({"wall": {"convert_s": t1 - t0, "trace_s": t2 - t1, "total_s": t2 - t0,
                               "second_call_s": t3 - t2},
                      "cpu": {"convert_s": c1 - c0, "trace_s": c2 - c1, "total_s": c2 - c0,
                              "second_call_s": c3 - c2},
                      "conversions": len(conversions)}))


def run_child(module_path, d2s_root, cache_dir, workdir):
    # Bytecode of d2s itself is cached (in the work folder, never beside the
    # sources), as in any installation, even where this shell turns it off.
    env = dict(os.environ, PYTHONPATH=d2s_root, D2S_CACHE_DIR=cache_dir,
               PYTHONPYCACHEPREFIX=os.path.join(workdir, "pycache"),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("D2S_INTERPRETED_CALLS", None)  # the default tiering, as a new user has it
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", module_path],
                          env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"child failed on {module_path}:\n{proc.stdout}{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---- parent: sizes x repeats, table, JSON, chart -------------------------------------------

def measure(blocks_list, repeats, d2s_root, workdir, clock, warm_up=True):
    results = []
    for blocks in blocks_list:
        path = os.path.join(workdir, f"generated_{blocks}.py")
        with open(path, "w") as f:
            f.write(generated_source(blocks))
        if warm_up:  # untimed: fills the bytecode cache of d2s and of the generated module
            run_child(path, d2s_root, os.path.join(workdir, f"warm_{blocks}"), workdir)
        runs = {"cold": [], "second_process": []}
        for r in range(repeats):
            cache_dir = os.path.join(workdir, f"cache_{blocks}_{r}")
            runs["cold"].append(run_child(path, d2s_root, cache_dir, workdir))
            runs["second_process"].append(run_child(path, d2s_root, cache_dir, workdir))
        entry = {"blocks": blocks, "lines": function_lines(blocks), "runs": runs}
        for kind, samples in runs.items():
            entry[kind] = {key: statistics.median(s[clock].get(key, float("nan"))
                                                  for s in samples)
                           for key in ("convert_s", "trace_s", "total_s", "second_call_s")}
        results.append(entry)
        print(f"  {entry['lines']:>5} lines measured", file=sys.stderr)
    return results


def table(results):
    head = (f"{'lines':>6} | {'first call':>10} {'convert':>8} {'trace':>8} {'ms/line':>8} "
            f"{'2nd call':>8} | {'2nd process':>11} {'convert':>8} {'trace':>8} "
            f"{'ms/line':>8} {'2nd call':>8}")
    rows = [head, "-" * len(head)]
    for e in results:
        c, s = e["cold"], e["second_process"]
        rows.append(
            f"{e['lines']:>6} | {c['total_s'] * 1e3:>8.1f}ms {c['convert_s'] * 1e3:>6.1f}ms "
            f"{c['trace_s'] * 1e3:>6.1f}ms {c['total_s'] * 1e3 / e['lines']:>8.3f} "
            f"{c['second_call_s'] * 1e3:>6.1f}ms | "
            f"{s['total_s'] * 1e3:>9.1f}ms {s['convert_s'] * 1e3:>6.1f}ms "
            f"{s['trace_s'] * 1e3:>6.1f}ms {s['total_s'] * 1e3 / e['lines']:>8.3f} "
            f"{s['second_call_s'] * 1e3:>6.1f}ms")
    return "\n".join(rows)


def chart(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no PNG: matplotlib is not importable; pip install -e '.[bench]' to get it)")
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lines = [e["lines"] for e in results]
    for kind, label in (("cold", "first call"), ("second_process", "second process")):
        ax.plot(lines, [e[kind]["total_s"] * 1e3 for e in results], "o-", label=label)
        ax.plot(lines, [e[kind]["convert_s"] * 1e3 for e in results], "x--",
                label=f"{label}: conversion")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("source lines of the converted function")
    ax.set_ylabel("ms (median)")
    ax.set_title("d2s to_static first call by function size")
    ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="40 and 160 lines, one repeat, no warm-up run (smoke run; "
                             "rough numbers)")
    parser.add_argument("--blocks", default=None,
                        help="comma-separated block counts (8 lines each; default 5,20,80,320)")
    parser.add_argument("--repeats", type=int, default=None, help="processes per size (5)")
    parser.add_argument("--d2s", default=ROOT, help="root of the d2s checkout to measure")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="cpu: the process's CPU time (default; steady on a shared "
                             "machine); wall: elapsed time")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "first_call.json"),
                        help="where to write the figures as JSON; '' for none "
                             "(default: benchmarks/results/first_call.json)")
    parser.add_argument("--png", default=os.path.join(HERE, "results", "first_call.png"),
                        help="chart path; '' for none")
    parser.add_argument("--child", metavar="MODULE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child)

    blocks = (tuple(int(b) for b in args.blocks.split(",")) if args.blocks
              else QUICK_BLOCKS if args.quick else FULL_BLOCKS)
    repeats = args.repeats or (1 if args.quick else 5)
    d2s_root = os.path.abspath(args.d2s)
    with tempfile.TemporaryDirectory(prefix="d2s-first-call-") as workdir:
        results = measure(blocks, repeats, d2s_root, workdir, args.clock,
                          warm_up=not args.quick)
    print(f"d2s first call by function size (d2s at {d2s_root}; {args.clock} time, median "
          f"of {repeats} process(es); first call = convert + trace)")
    print(table(results))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"d2s": d2s_root, "repeats": repeats, "clock": args.clock,
                       "python": sys.version.split()[0], "results": results}, f, indent=1)
        print(f"JSON: {args.json}")
    if args.png and chart(results, args.png):
        print(f"PNG: {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
