"""d2s in one minute: write eager code, convert it with `to_static`, get a program.

    python examples/demo.py                 # a few seconds
    python examples/demo.py --repeat 2000   # steadier timings

1. A function with a `while` on tensors: run eagerly, then converted with
   `d2s.jit.to_static`. The results are equal, the program it became is
   printed, and both are timed: the converted loop skips Python's per-op
   work, so it is faster.
2. A Layer (an MLP), converted the same way: equal outputs, both timed.
3. A training step (forward, backward, Adam update), written once and run
   eagerly and converted whole: the losses are the same numbers.

Nothing is written to disk.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import enable_to_static, to_static


# ---- 1. a function ---------------------------------------------------------------------

def newton_sqrt(a):
    """Square roots by Newton's method: a loop whose trip count depends on the data."""
    x = d2s.ones_like(a)
    steps = d2s.zeros([], "int64")
    while d2s.abs(x * x - a).max() > 1e-3 * a.max():
        x = 0.5 * (x + a / x)
        steps = steps + 1
    return x, steps


# ---- 2. a Layer ------------------------------------------------------------------------

def make_mlp():
    d2s.seed(0)  # the same initial weights every time
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(),
                         nn.Linear(64, 10))


def timed(fn, repeat):
    """(last result, µs per call), after two warm-up calls (the first converts
    and traces, the second compiles the program)."""
    fn()
    fn()
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    return out, (time.perf_counter() - t0) / repeat * 1e6


def speed_line(eager_us, static_us):
    how = "faster" if eager_us >= static_us else "slower"
    return (f"  eager {eager_us:8.1f} µs/call   to_static {static_us:8.1f} µs/call   "
            f"to_static is {max(eager_us, static_us) / min(eager_us, static_us):.1f}x {how}")


def demo_function(repeat, show_program):
    print("== 1. a function with a tensor `while`, eager and converted ==")
    a = d2s.to_tensor(np.linspace(1.0, 100.0, 16).astype("float32"))
    converted = to_static(newton_sqrt)
    (x_e, n_e), eager_us = timed(lambda: newton_sqrt(a), repeat)
    (x_s, n_s), static_us = timed(lambda: converted(a), repeat)
    print(f"  eager:     {n_e.item()} steps, sqrt(100) ~ {x_e.numpy()[-1]:.6f}")
    print(f"  to_static: {n_s.item()} steps, sqrt(100) ~ {x_s.numpy()[-1]:.6f}")
    same = np.array_equal(x_e.numpy(), x_s.numpy()) and n_e.item() == n_s.item()
    print(f"  equal results: {same}")
    if show_program:
        print("  the program it became (`converted.get_concrete_program(a).main_program`):")
        text = str(converted.get_concrete_program(a).main_program)
        print("\n".join("    " + line for line in text.splitlines()))
    print(speed_line(eager_us, static_us))


def demo_layer(repeat):
    print("\n== 2. a Layer (MLP 32-64-64-10, batch 8), eager and converted ==")
    x = d2s.to_tensor(np.random.default_rng(0).normal(size=(8, 32)).astype("float32"))
    model = make_mlp()
    eager_out, eager_us = timed(lambda: model(x).numpy(), repeat)
    to_static(model)  # converts the Layer's forward, in place
    static_out, static_us = timed(lambda: model(x).numpy(), repeat)
    print(f"  max |eager - static| = {np.max(np.abs(eager_out - static_out)):.2e}")
    print(speed_line(eager_us, static_us))


def demo_training(steps):
    print(f"\n== 3. a training step (Adam, {steps} steps), eager and converted whole ==")
    rng = np.random.default_rng(1)
    x = d2s.to_tensor(rng.normal(size=(64, 32)).astype("float32"))
    y = d2s.to_tensor(rng.integers(0, 10, size=64))
    losses = {}
    for mode in ("eager", "static"):
        model = make_mlp()
        opt = d2s.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())

        def train_step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        step = to_static(train_step)
        enable_to_static(mode == "static")   # the one switch: run it as written, or converted
        try:
            losses[mode] = [step(x, y).item() for _ in range(steps)]
        finally:
            enable_to_static(True)
    print(f"  {'step':>6}{'eager loss':>14}{'to_static loss':>16}")
    for i in sorted({0, steps // 3, 2 * steps // 3, steps - 1}):
        print(f"  {i:6d}{losses['eager'][i]:14.6f}{losses['static'][i]:16.6f}")
    print(f"  same losses: {losses['eager'] == losses['static']}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=300,
                        help="calls per timing, after two warm-up calls (default 300)")
    parser.add_argument("--steps", type=int, default=30,
                        help="training steps of part 3 (default 30)")
    parser.add_argument("--no-program", action="store_true",
                        help="do not print the program the function became")
    args = parser.parse_args(argv)
    demo_function(args.repeat, not args.no_program)
    demo_layer(args.repeat)
    demo_training(args.steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
