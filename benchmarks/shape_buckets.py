"""Variable lengths on a compiling backend, with and without shape buckets.

    python benchmarks/shape_buckets.py                  # xla, 20 lengths in 3..64
    python benchmarks/shape_buckets.py --backend numpy --calls 200

A small sequence encoder (a projection, a two-head reshape/transpose, a
masked mean over the length) is called with lengths drawn from 3..64, first
with `InputSpec([None, None, 16])` (one executable per length on xla), then
with `buckets=[16, 32, 64]` (one per bucket). Prints the wall time of all
calls, the time of the calls after the first of each distinct shape, and the
number of distinct shapes the program was run with; checks that both give
the eager results. The first process's compiles are what buckets save:
compare the totals side by side, on the same machine.
"""
import argparse
import time

import numpy as np

import d2s
from d2s.jit.concrete_program import ConcreteProgram
from d2s.static import InputSpec


class Encoder(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.proj = d2s.nn.Linear(16, 16)

    def forward(self, x):
        b = x.shape[0]
        h = d2s.tanh(self.proj(x))
        heads = d2s.transpose(d2s.reshape(h, [b, -1, 2, 8]), [0, 2, 1, 3])
        return heads.mean(axis=2), d2s.nn.functional.softmax(h.sum(-1), axis=1)


def run(buckets, lengths, backend):
    d2s.seed(0)
    model = Encoder()
    spec = InputSpec([None, None, 16], buckets=buckets, bucket_axis=1 if buckets else None)
    fn = d2s.jit.to_static(model.forward, input_spec=[spec], backend=backend)
    shapes = []
    original = ConcreteProgram.__call__

    def spy(self, tensors, backend=None):
        shapes.append(tuple(tensors[0].shape))
        return original(self, tensors, backend)
    ConcreteProgram.__call__ = spy
    rng = np.random.default_rng(1)
    xs = [d2s.to_tensor(rng.standard_normal((2, n, 16)).astype("float32")) for n in lengths]
    seen, steady, start = set(), 0.0, time.perf_counter()
    try:
        for x in xs:
            t0 = time.perf_counter()
            out = fn(x)
            dt = time.perf_counter() - t0
            if shapes[-1] in seen:
                steady += dt
            seen.add(shapes[-1])
            np.testing.assert_allclose(out[0].numpy(), model.__class__.forward(model, x)[0].numpy(),
                                       rtol=1e-4, atol=1e-5)
    finally:
        ConcreteProgram.__call__ = original
    return time.perf_counter() - start, steady, len(seen)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="xla",
                    help="the backend the converted function runs on (default xla)")
    ap.add_argument("--calls", type=int, default=60,
                    help="calls per mode, each on a length drawn from a fixed set (default 60)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    lengths = rng.choice(np.arange(3, 65), size=20, replace=False)
    lengths = [int(n) for n in rng.choice(lengths, size=args.calls)]
    print(f"{args.calls} calls, {len(set(lengths))} distinct lengths, backend {args.backend}")
    for name, buckets in (("per length", None), ("buckets 16/32/64", [16, 32, 64])):
        total, steady, programs = run(buckets, lengths, args.backend)
        print(f"{name:>18}: total {total:7.3f} s, repeated shapes {steady * 1e3:8.1f} ms, "
              f"{programs} distinct shapes run")


if __name__ == "__main__":
    main()
