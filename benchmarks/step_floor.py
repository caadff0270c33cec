"""How far each way of running W6's training step is from its matmul floor.

W6 (benchmarks/workloads.py) is one SGD step of a 784-128-128-10 MLP on a
batch of 32: eight matrix products (three forward, five backward) and some
thirty small elementwise ops. On one core the products dominate, and no
runtime makes them cheaper: numpy and XLA both call a BLAS-like kernel. This
script times, interleaved round by round in one process (the low percentiles
are the figures to read on a shared machine: other load only adds time):

* `8 matmuls`: the step's eight products alone, in numpy (the floor);
* `hand numpy`: the hand-written step (`train_step_numpy`);
* `to_static`: the converted whole step on the numpy backend;
* `eager`: the same step in d2s eager mode;
* with jax installed, `to_static xla` and the hand-written `jax.jit` step
  fed the numpy batch (`jax.jit np`, benchmarks/others.py).

It prints each mode's time above the floor, and what the targets of the
whole-step issue ask of it: `to_static` >= 2x eager means the step's
non-matmul work must take at most `eager / 2 - floor`.

    taskset -c 0 python benchmarks/step_floor.py [--rounds 30]
"""
import os
import sys

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import argparse  # noqa: E402
import gc  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import d2s  # noqa: E402
import workloads  # noqa: E402
from others import available, jax_modes  # noqa: E402


def matmul_floor(np_args):
    """The step's eight products on the step's own shapes (fixed operands)."""
    (w1, b1, w2, b2, w3, b3), x = np_args[0], np_args[1]
    h1 = np.maximum(x @ w1 + b1, 0)
    h2 = np.maximum(h1 @ w2 + b2, 0)
    dz = np.full((x.shape[0], w3.shape[1]), 0.01, np.float32)
    dh2, dh1 = dz @ w3.T, (dz @ w3.T) @ w2.T

    def products():
        x @ w1, h1 @ w2, h2 @ w3, dz @ w3.T, dh2 @ w2.T, h2.T @ dz, h1.T @ dh2, x.T @ dh1
    return products


def modes(wl, xla):
    params = [p.copy() for p in wl.np_args[0]]
    x, label, lr = wl.np_args[1:]

    def eager():
        d2s.jit.enable_to_static(False)
        try:
            wl.call()
        finally:
            d2s.jit.enable_to_static(True)
    out = {"8 matmuls": matmul_floor(wl.np_args),
           "hand numpy": lambda: workloads.train_step_numpy(params, x, label, lr),
           "to_static": wl.call, "eager": eager}
    if xla:
        step = d2s.jit.to_static(workloads.make_train_step(*_model_and_opt()), backend="xla")
        batch = (d2s.to_tensor(x), d2s.to_tensor(label))
        out["to_static xla"] = lambda: step(*batch)
        out["jax.jit np"] = jax_modes("W6", wl.np_args)["jax.jit np"]
    return out


def _model_and_opt():
    """A model and optimizer like W6's, of their own: the xla step must not
    share parameters with the numpy one (each would rebind the other's)."""
    model = workloads.MLPLoss(workloads.MLP(784, 128, 128, 10))
    return model, d2s.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())


def measure(fns, rounds, calls=20):
    for fn in fns.values():
        for _ in range(5):
            fn()
    times = {k: [] for k in fns}
    gc.disable()
    try:
        for _ in range(rounds):
            for k, fn in fns.items():
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                times[k].append((time.perf_counter() - t0) / calls)
    finally:
        gc.enable()
    return {k: sorted(v) for k, v in times.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30,
                    help="timed rounds per mode; the minimum and median are printed (default 30)")
    ap.add_argument("--no-xla", action="store_true",
                    help="skip the xla modes (default: on when jax imports)")
    args = ap.parse_args(argv)
    wl = workloads.w6(np.random.default_rng(0))
    xla = not args.no_xla and "jax" in available()
    times = measure(modes(wl, xla), args.rounds)
    low = {k: v[len(v) // 10] for k, v in times.items()}
    med = {k: v[len(v) // 2] for k, v in times.items()}
    floor = low["8 matmuls"]
    print(f"W6 step, one core, {args.rounds} interleaved rounds (p10 and median per call)")
    print(f"{'mode':14s} {'p10':>9s} {'median':>9s} {'above floor':>12s} {'hand numpy/mode':>16s}")
    for k in times:
        print(f"{k:14s} {low[k] * 1e6:7.1f}us {med[k] * 1e6:7.1f}us "
              f"{(low[k] - floor) * 1e6:10.1f}us {low['hand numpy'] / low[k]:15.2f}x")
    budget = low["eager"] / 2 - floor
    print(f"to_static >= 2x eager needs a step of <= {low['eager'] / 2 * 1e6:.1f}us: "
          f"{budget * 1e6:.1f}us of non-matmul work (hand numpy's: "
          f"{(low['hand numpy'] - floor) * 1e6:.1f}us, to_static's: "
          f"{(low['to_static'] - floor) * 1e6:.1f}us)")


if __name__ == "__main__":
    main()
