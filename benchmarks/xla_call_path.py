"""Where a to_static call on the xla backend spends its time, layer by layer.

For each workload, in one process, interleaved in short rounds (other
processes on a shared machine only ever add time, so the low percentiles
are the figures to read):

* `to_static xla`: the user's call (`StaticFunction` -> program -> runner);
* `per-call path`: the xla runner's own per-call function (what the jit layer
  calls: parameters, donation, executable, write-back, host arrays);
* `executable`: the same compiled XLA executable called bare on the same
  inputs (the parameters' device arrays; a training step donating its own
  copies), waiting for its results without making host arrays;
* `floor` (forwards): the least a Tensor-in, Tensor-out call can do around
  that executable: a Python function that unwraps the Tensor arguments,
  calls it (its C++ entry) and wraps each result in a device-resident
  Tensor, nothing checked;
* `jax.jit np` / `jax.jit`: the hand-written JAX twin (benchmarks/others.py)
  fed the numpy input a d2s user holds / device arrays.

So `to_static xla - per-call path` is the jit layer, `per-call path -
executable` the backend's Python and host arrays, `executable - jax.jit np`
the lowering, and `to_static xla - floor` what d2s's checks (guards,
arguments, modes, state) cost beyond wrapping. Usage:
`taskset -c 0 python benchmarks/xla_call_path.py [--workloads W2,W6]
[--rounds 100] [--clock cpu]`.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import d2s  # noqa: E402
import workloads  # noqa: E402
from others import jax_modes  # noqa: E402
from xla_columns import ready  # noqa: E402
from d2s.backends.xla import concrete as xla_concrete  # noqa: E402
from d2s.backends.xla._jax import call_x64, jax, x64  # noqa: E402
from d2s.core.tensor import new_device_tensor  # noqa: E402

DEFAULT = "W1,W2,W3,W3b,W6"


def _runners():
    return [o for o in gc.get_objects()
            if isinstance(o, (xla_concrete.ConcreteRunner, xla_concrete.StepRunner))]


def _new_runner(before):
    found = [o for o in _runners() if not any(o is b for b in before)]
    assert len(found) == 1, f"expected one new xla runner, found {len(found)}"
    return found[0]


def _recorded_feeds(runner, wl):
    """(feeds, tensors) as the jit layer hands them to the runner's per-call
    path: a step's recorded from one call; a forward's are its Tensor
    arguments' arrays as they hold them (`wl.program`'s example arguments,
    flat)."""
    if isinstance(runner, xla_concrete.ConcreteRunner):
        # (as held: an input the calls moved to the device is its device array;
        # `_value` would make a host copy and hold it, keeping it off the device)
        feeds = [a._raw for a in wl.program[1] if isinstance(a, d2s.Tensor)]
        return feeds, runner._forward.xla.params.tensors
    fast, seen = runner._fast, []

    def spy(feeds, tensors):
        seen.append((list(feeds), tensors))
        return fast(feeds, tensors)
    runner._fast = spy
    wl.call()
    runner._fast = fast
    return seen[0]


def _bare_forward(xla, feeds):
    exe = xla.executable(feeds)
    call = exe.compiled._call or exe.compiled
    params = xla.params.device_values()

    def run():
        if exe.needs_x64:
            with x64():
                return jax.block_until_ready(call(*feeds, *params))
        return jax.block_until_ready(call(*feeds, *params))
    return run


def _bare_step(xla, feeds):
    """The step's executable on its own copies of the parameters, donating
    them and taking the new values as the next call's, as a JAX user's loop."""
    exe = xla.executable(feeds)
    with x64():
        state = [jax.device_put(np.array(p)) for p in xla.params.device_values()]
    n_fetched = len(xla.fetch_names)

    def run():
        outs = exe.call(feeds + state)
        jax.block_until_ready(outs)
        for i, value in zip(xla.written_at, outs[n_fetched:]):
            state[i] = value
        return outs
    return run


def _floor_forward(xla, wl):
    """`floor` (see the module doc): the workload's Tensor arguments
    unwrapped, the executable called, its results wrapped, as one Python
    function; waited for as `to_static xla` is."""
    tensors = [a for a in wl.program[1] if isinstance(a, d2s.Tensor)]
    exe = xla.executable([t._raw for t in tensors])
    call = exe.compiled._call or exe.compiled
    params = xla.params.device_values()
    single = len(xla.fetch_names) == 1

    def floor(*args):
        feeds = [a._raw for a in args]
        outs = call_x64(call, feeds + params) if exe.needs_x64 else call(*feeds, *params)
        return new_device_tensor(outs[0]) if single else tuple(map(new_device_tensor, outs))
    return lambda: ready(floor(*tensors))


def modes_for(key, wl):
    """{mode: zero-argument function}, or None when the workload's program
    has no per-call path. Call under the workload's grad mode."""
    before = _runners()
    for _ in range(3):
        wl.call()
    runner = _new_runner(before)
    if runner._fast is None:
        return None
    feeds, tensors = _recorded_feeds(runner, wl)
    if isinstance(runner, xla_concrete.StepRunner):
        bare = _bare_step(runner._part.xla, feeds)
    else:
        bare = _bare_forward(runner._forward.xla, feeds)
    fast = runner._fast
    # (results on xla are computed asynchronously: each mode waits for its own)
    call = wl.call
    modes = {"to_static xla": lambda: ready(call()),
             "per-call path": lambda: jax.block_until_ready(fast(feeds, tensors)),
             "executable": bare}
    if isinstance(runner, xla_concrete.ConcreteRunner) and wl.program:
        modes["floor"] = _floor_forward(runner._forward.xla, wl)
    twins = jax_modes(key, wl.np_args)
    modes.update({k: twins[k] for k in ("jax.jit np", "jax.jit") if k in twins})
    return modes


def measure(modes, rounds, calls, clock=time.perf_counter):
    res = {k: [] for k in modes}
    for _ in range(rounds):
        for k, f in modes.items():
            f()
            t0 = clock()
            for _ in range(calls):
                f()
            res[k].append((clock() - t0) / calls)
    return {k: sorted(v) for k, v in res.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default=DEFAULT,
                    help=f"comma-separated workloads of benchmarks/workloads.py "
                         f"(default {DEFAULT})")
    ap.add_argument("--rounds", type=int, default=100, help="timed rounds per mode (default 100)")
    ap.add_argument("--calls", type=int, default=10, help="calls per round")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall: elapsed time; cpu: this process's CPU time, all its "
                         "threads (XLA's too): on a shared machine, what other "
                         "processes' load adds is left out")
    args = ap.parse_args(argv)
    # Compiled on the calling thread: the timed calls run the executable, not
    # the numpy tier a background compile serves meanwhile (d2s.backends.xla.background).
    os.environ.setdefault("D2S_XLA_SYNC", "1")
    d2s.jit.set_backend("xla")
    print(f"{'workload':8s} {'mode':14s} {'p10':>9s} {'median':>9s}  p10 / jax.jit")
    for key in args.workloads.split(","):
        wl = workloads.WORKLOADS[key](np.random.default_rng(0))
        # forward workloads run under no_grad, as compare_modes runs them
        with d2s.no_grad() if wl.no_grad else contextlib.nullcontext():
            modes = modes_for(key, wl)
            if modes is None:
                print(f"{key:8s} no per-call path (the program is not plain)")
                continue
            res = measure(modes, args.rounds, args.calls,
                          time.process_time if args.clock == "cpu" else time.perf_counter)
        p10 = {k: v[len(v) // 10] for k, v in res.items()}
        base = p10.get("jax.jit")
        for k, v in res.items():
            ratio = f"{p10[k] / base:5.2f}" if base else ""
            print(f"{key:8s} {k:14s} {p10[k] * 1e6:7.1f}us {v[len(v) // 2] * 1e6:7.1f}us  {ratio}")


if __name__ == "__main__":
    main()
