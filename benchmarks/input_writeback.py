"""Per-call cost of writing a converted function's input back (jit.outliving
"input" effects) on a cache hit.

`writes` writes its input in place (`cache[:, 0] = x`): the program returns
the written value too and the call assigns it into the caller's Tensor.
`returns` is the functional form a user wrote before (a copy, written and
returned). Both run the same ops; the difference is the write-back. Times
are process time, best of 7 rounds: run it pinned to one core
(`taskset -c 0 python benchmarks/input_writeback.py --backend numpy`).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import d2s


def writes(x, cache):
    cache[:, 0] = x
    return cache.sum()


def returns(x, cache):
    c = cache.clone()
    c[:, 0] = x
    return c.sum(), c


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="numpy", help="numpy (default) or xla")
    p.add_argument("--calls", type=int, default=2000,
                   help="cached calls timed per repeat (default 2000)")
    args = p.parse_args(argv)
    for fn in (writes, returns):
        static = d2s.jit.to_static(fn, backend=args.backend)
        x, cache = d2s.to_tensor(np.ones(64, "float32")), d2s.zeros([64, 8])
        for _ in range(50):  # (past the first calls: the per-call path)
            static(x, cache)
        best = float("inf")
        for _ in range(7):
            start = time.process_time()
            for _ in range(args.calls):
                static(x, cache)
            best = min(best, (time.process_time() - start) / args.calls)
        print(f"{args.backend} {fn.__name__}: {best * 1e6:.1f} us/call")


if __name__ == "__main__":
    main()
