"""W7 (the small CNN training step) per call in CPU time, every mode of
compare_modes' row: to_static on numpy and xla, torch eager, jax.jit.

compare_modes times wall-clock medians, which on a machine shared with other
jobs measure the load as much as the step. The process's CPU time
(`time.process_time`, every thread of it: XLA's and OpenBLAS's pools too)
only counts the work done, so two trees or two modes compare on a busy
machine. Run it pinned to one core, as the targets are stated::

    OPENBLAS_NUM_THREADS=1 taskset -c 0 python benchmarks/cnn_cpu_time.py --calls 30
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# as compare_modes: XLA's CPU pool idles (spinning, CPU time) on one core
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
# the first xla call compiles on the caller: with the background tier, a busy
# machine starves the (lowest-priority) compile and numpy keeps serving
os.environ.setdefault("D2S_XLA_SYNC", "1")
sys.path[:0] = [os.path.dirname(HERE), HERE]

import others  # noqa: E402
import workloads  # noqa: E402
import xla_columns  # noqa: E402


def cpu_ms(fn, calls, warmup=3):
    """(min, median) CPU milliseconds per call of `fn` over `calls` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(calls):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return 1e3 * min(times), 1e3 * float(np.median(times))


def gemm_floor_ms(calls):
    """CPU ms of the step's convolution products alone, each one float32
    matrix product over the whole batch (operands already laid out): the
    forward and filter gradient of the three layers, the input gradient of
    the last two. What numpy's BLAS needs with no im2col, no col2im and no
    elementwise pass at all."""
    rng = np.random.default_rng(0)
    mats = []
    for n, c, hw, o in ((32, 3, 32, 16), (32, 16, 16, 32), (32, 32, 8, 64)):
        rows = n * hw * hw
        cols = rng.normal(size=(rows, c * 9)).astype(np.float32)
        g = rng.normal(size=(rows, o)).astype(np.float32)
        w = rng.normal(size=(c * 9, o)).astype(np.float32)
        mats += [(cols, w), (cols.T, g)] + ([(g, w.T)] if c > 3 else [])
    return cpu_ms(lambda: [a @ b for a, b in mats], calls)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=30,
                        help="timed calls per mode (the minimum and median are reported)")
    parser.add_argument("--floor", action="store_true",
                        help="also time the convolutions' matrix products alone")
    args = parser.parse_args(argv)
    results = {}
    wl = workloads.w7(np.random.default_rng(0))
    results["to_static numpy"] = cpu_ms(lambda: wl.call().numpy(), args.calls)
    if xla_columns.available():
        with xla_columns.on_xla():  # the same StaticFunction, as compare_modes' column
            results["to_static xla"] = cpu_ms(lambda: wl.call().numpy(), args.calls)
    peers, errors = others.modes_for("W7", wl.np_args, ["torch", "jax"])
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass
    for name in ("torch", "jax.jit"):
        if name in peers:
            results[name] = cpu_ms(peers[name], args.calls)
    if args.floor:
        results["conv GEMMs alone"] = gemm_floor_ms(args.calls)
    print(f"W7 CPU time per call ({args.calls} calls; min / median ms)")
    for name, (lo, med) in results.items():
        print(f"  {name:18s} {lo:8.2f} {med:8.2f}")
    ratios = [("to_static numpy", "torch"), ("to_static xla", "jax.jit")]
    for a, b in ratios:
        if a in results and b in results:
            print(f"  {a} / {b}: {results[a][0] / results[b][0]:.2f}x (min), "
                  f"{results[a][1] / results[b][1]:.2f}x (median)")
    for lib, err in errors.items():
        print(f"  ({lib} unavailable: {err})")


if __name__ == "__main__":
    main()
