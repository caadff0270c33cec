"""Per-call time of the workloads' static programs on the numpy and xla
backends, through `d2s.static.Executor`, and the xla first-call time.

    python benchmarks/xla_programs.py                 # W1 W2 W3 W3b W5
    taskset -c 0 python benchmarks/xla_programs.py --workloads W2,W5 --rounds 5

Each workload's `to_static` program (benchmarks/workloads.py) is built once,
then run by `Executor(backend=...)` with the same feeds; the two backends'
results are checked equal before timing; the hand-written numpy version
and (with jax installed) `jax.jit` of the same model rewritten with `lax`
(benchmarks/others.py) are timed beside them. First call: lowering, compiling and running
the program (cold: the first xla call of the process, importing and
initialising JAX on the way; warm-jax: the same program lowered and
compiled again).
Phase 2 of issue 9 adds the to_static xla and jax.jit columns to
compare_modes.py; this is the program-level view.
"""
import os
import sys

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import d2s  # noqa: E402
from d2s import static  # noqa: E402

import others  # noqa: E402
import timing  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

def program_of(wl):
    """(program, feed dict, fetch names) of the program `wl.call()` runs."""
    from d2s.jit.concrete_program import ConcreteProgram
    seen = {}
    original = ConcreteProgram.__call__

    def spy(self, tensors, *rest):
        seen["program"], seen["tensors"] = self, tensors
        return original(self, tensors, *rest)
    ConcreteProgram.__call__ = spy
    try:
        with d2s.no_grad():
            wl.call()
    finally:
        ConcreteProgram.__call__ = original
    concrete, tensors = seen["program"], seen["tensors"]
    feed = {v.name: t.numpy() for v, t in zip(concrete.inputs, tensors)}
    return concrete.main_program, feed, [v.name for v in concrete.outputs]


def first_call(program, feed, fetch):
    t0 = time.perf_counter()
    static.Executor(backend="xla").run(program, feed=feed, fetch_list=fetch)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="W1,W2,W3,W3b,W5",
                    help="comma-separated workloads of benchmarks/workloads.py "
                         "(default W1,W2,W3,W3b,W5)")
    ap.add_argument("--rounds", type=int, default=7, help="timed rounds per mode (default 7)")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the workloads' data and weights (default 0)")
    args = ap.parse_args()
    print(f"{'workload':9} {'hand np µs':>10} {'numpy µs':>10} {'xla µs':>10} "
          f"{'jax.jit µs':>10} {'hand/xla':>8} {'numpy/xla':>9} {'xla/jax':>7} "
          f"{'1st cold ms':>12} {'1st warm-jax ms':>16}")
    keys = args.workloads.split(",")
    for n, key in enumerate(keys, 1):
        # each workload compiles and times for a while: say which one (stderr)
        print(f"[{n}/{len(keys)}] {key}: compiling and timing ...", file=sys.stderr, flush=True)
        wl = WORKLOADS[key](np.random.default_rng(args.seed))
        program, feed, fetch = program_of(wl)
        cold = first_call(program, feed, fetch)
        program.__dict__.pop("_xla_runners")  # forget the executables: lower and compile again
        warm = first_call(program, feed, fetch)
        exes = {b: static.Executor(backend=b) for b in ("numpy", "xla")}
        ref = exes["numpy"].run(program, feed=feed, fetch_list=fetch)
        got = exes["xla"].run(program, feed=feed, fetch_list=fetch)
        for r, g in zip(ref, got):
            np.testing.assert_allclose(g, r, rtol=wl.rtol, atol=wl.atol)
        modes = {b: ((lambda e=e: e.run(program, feed=feed, fetch_list=fetch)),
                     d2s.no_grad) for b, e in exes.items()}
        modes["hand"] = (wl.numpy_call, d2s.no_grad)
        jit = others.jax_modes(key, wl.np_args).get("jax.jit")
        if jit is not None:
            modes["jax.jit"] = (jit, d2s.no_grad)
        stats = timing.measure(modes, rounds=args.rounds)
        t_hand, t_np, t_xla = (stats[m].median for m in ("hand", "numpy", "xla"))
        t_jax = stats["jax.jit"].median if jit is not None else float("nan")
        print(f"{key:9} {t_hand * 1e6:10.1f} {t_np * 1e6:10.1f} {t_xla * 1e6:10.1f} "
              f"{t_jax * 1e6:10.1f} {t_hand / t_xla:8.2f} {t_np / t_xla:9.2f} "
              f"{t_xla / t_jax:7.2f} {cold * 1e3:12.1f} {warm * 1e3:16.1f}", flush=True)


if __name__ == "__main__":
    main()
