"""Per-call cost of read guards (jit.read_guards) on a cache hit.

A converted function that reads plain values from its Layers checks them
before each run; the check of values kept in Layers is one comparison of
a version counter until some Layer attribute is set. This prints the
cache-hit time of a function that reads nothing (`x + 1`) and of a model
of 4 sublayers reading 13 int attributes, the compiled check alone, and the
full check after a Layer attribute was set. Run it pinned to one core
(`taskset -c 0 python benchmarks/read_guards.py`) and compare with a
checkout without read guards for the before/after of the cache hit.
"""
from __future__ import annotations

import argparse
import timeit

import numpy as np

import d2s
import d2s.nn as nn
from d2s.core import state


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.a, self.b, self.c = 1, 2, 3

    def forward(self, h):
        return self.fc(h) * float(self.a + self.b - self.c + 1)


class Model(nn.Layer):
    def __init__(self):
        super().__init__()
        self.blocks = nn.LayerList([Block() for _ in range(4)])
        self.n = 4

    def forward(self, h):
        for i in range(self.n):
            h = self.blocks[i](h)
        return h


def _add_one(a):
    return a + 1.0


def _per_call(fn, number, repeat):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15,
                        help="timing repeats; the fastest is reported (default 15)")
    args = parser.parse_args()
    x = d2s.to_tensor(np.ones((2, 4), "float32"))
    add = d2s.jit.to_static(_add_one)
    model = d2s.jit.to_static(Model())
    add(x), model(x)
    print(f"cache hit, x + 1:                  {_per_call(lambda: add(x), 20000, args.repeat) * 1e6:.2f} us")
    print(f"cache hit, 4 blocks, 13 int attrs: {_per_call(lambda: model(x), 5000, args.repeat) * 1e6:.2f} us")
    guards = getattr(model.forward.concrete_program, "writes", None)
    guards = getattr(guards, "read_guards", None)
    if guards is None:
        print("(no read guards in this checkout)")
        return
    print(f"compiled check ({len(guards.entries)} entries):      "
          f"{_per_call(guards.holds, 200000, args.repeat) * 1e9:.0f} ns")
    version = state.plain_attributes_version

    def bump():
        version[0] += 1

    def bump_and_check():
        version[0] += 1
        guards.holds()
    full = _per_call(bump_and_check, 100000, args.repeat) - _per_call(bump, 100000, args.repeat)
    print(f"full check after a Layer attribute was set: {full * 1e9:.0f} ns")


if __name__ == "__main__":
    main()
