"""A GRU trained on variable-length batches, eagerly and on each backend.

The case the tiered xla compile exists for: 44 batches of 9 distinct
sequence lengths, a whole training step (`loss.backward()`, `opt.step()`)
converted once with `InputSpec([B, None, F])`. On xla every new length is a
new executable; compiled on the calling thread (`compile="sync"`, the old
behaviour) each first call of a length waits for XLA, while the default
(`compile="async"`) runs those calls on numpy as XLA compiles in the
background, and switches when the executable is ready. On one core
(`taskset -c 0`) that compile waits until a length's numpy calls took as
long as its compile is expected to (the compile budget,
`D2S_XLA_COMPILE_BUDGET`, see d2s/backends/xla/background.py);
`xla-now` is the default with a budget of 0 (every new length queued at
its first call, the behaviour before the budget).

Each mode runs in a fresh process with an empty d2s cache folder (no
executable from an earlier run), timed from its first step to its last
(imports, the model, and for xla JAX's and the backend's start-up
excluded), in wall time or (`--clock cpu`, for a loaded machine) the
process's CPU time, background compiles included; the losses of every
mode are compared with the first mode's (eager's by default: over long
runs XLA's and numpy's float32 rounding lets the trajectories drift
apart). Compiles still under way when the run ends are not counted.
Usage: `taskset -c 0 python benchmarks/xla_variable_lengths.py
[--epochs N] [--clock cpu] [--modes numpy,xla-async]`.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MODES = ("eager", "numpy", "xla-sync", "xla-async", "xla-now")
LENGTHS = (5, 9, 12, 16, 20, 24, 31, 40, 48)  # 9 distinct lengths
N_BATCHES = 44
BATCH, FEATURES, HIDDEN = 4, 8, 32


def batches(seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for i in range(N_BATCHES):
        n = LENGTHS[i % len(LENGTHS)] if i < len(LENGTHS) else int(rng.choice(LENGTHS))
        out.append((rng.normal(size=(BATCH, n, FEATURES)).astype(np.float32),
                    rng.normal(size=(BATCH, 1)).astype(np.float32)))
    return out


def run_mode(mode, epochs, clock="wall"):
    """One mode's run in this process: per-epoch seconds and the losses.
    `clock`: "wall", or "cpu" (this process's CPU time, background compiles
    included: on a loaded machine the time the run itself took)."""
    import numpy as np
    import d2s
    from d2s import nn

    d2s.seed(0)
    gru = nn.GRU(FEATURES, HIDDEN)
    head = nn.Linear(HIDDEN, 1)
    params = gru.parameters() + head.parameters()
    opt = d2s.optimizer.Adam(learning_rate=1e-3, parameters=params)

    def step(x, y):
        out, h = gru(x)
        loss = ((head(out[:, -1]) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    if mode != "eager":
        backend, compile = (mode.split("-") + [None])[:2]
        compile = "async" if compile == "now" else compile
        step = d2s.jit.to_static(step, input_spec=[
            d2s.static.InputSpec([BATCH, None, FEATURES], "float32"),
            d2s.static.InputSpec([BATCH, 1], "float32")], backend=backend, compile=compile)
        if backend == "xla":  # JAX's and the backend's start-up are not what is measured
            import jax.numpy as jnp
            jnp.zeros(1).block_until_ready()
            import d2s.backends.xla.concrete  # noqa: F401  (imported at the first call)
    data = [(d2s.to_tensor(x), d2s.to_tensor(y)) for x, y in batches()]
    now = time.process_time if clock == "cpu" else time.perf_counter
    times, losses = [], []
    for _ in range(epochs):
        start = now()
        for x, y in data:
            losses.append(float(step(x, y)))
        times.append(now() - start)
    ready = None
    if mode in ("xla-async", "xla-now"):  # lengths compiled by the end of the run
        from d2s.backends.xla import background
        ready = background.finished()
    return {"times": times, "losses": losses, "compiled_during_run": ready}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=1,
                        help="passes over the 44 batches (later ones repeat lengths)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time, or the process's CPU time (a loaded machine)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_mode(args.child, args.epochs, args.clock)))
        return
    results = {}
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, D2S_CACHE_DIR=cache)
            env.pop("D2S_XLA_SYNC", None)
            env.pop("D2S_XLA_COMPILE_BUDGET", None)
            if mode == "xla-now":
                env["D2S_XLA_COMPILE_BUDGET"] = "0"
            proc = subprocess.run([sys.executable, __file__, "--child", mode, "--epochs",
                                   str(args.epochs), "--clock", args.clock], env=env,
                                  capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"{mode} failed:\n{proc.stderr}")
        results[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
    ref = results.get("eager", next(iter(results.values())))["losses"]
    print(f"GRU({FEATURES}->{HIDDEN}), {N_BATCHES} batches of {len(LENGTHS)} lengths, "
          f"whole training step; {args.clock} seconds per epoch")
    for mode, r in results.items():
        import numpy as np
        err = float(np.max(np.abs(np.array(r["losses"]) - np.array(ref))
                           / np.maximum(np.abs(ref), 1e-6)))
        times = [f"{t:7.3f}" for t in r["times"]]
        epochs = "  ".join(times if len(times) <= 6 else times[:3] + ["..."] + times[-3:])
        extra = ""
        if r["compiled_during_run"] is not None:
            extra = f"  ({r['compiled_during_run']} compiles finished during the run)"
        print(f"  {mode:10s} total {sum(r['times']):7.3f}  per epoch {epochs}  "
              f"losses vs eager: max rel err {err:.1e}{extra}")


if __name__ == "__main__":
    main()
