"""Two ways to get gradients of a d2s program on the xla backend, side by side.

(a) d2s's own backward: the gradient ops built from each op's vjp rule
    (`static.append_backward`), lowered to XLA with the forward — what the
    backend does.
(b) `jax.vjp` of the lowered forward: JAX differentiates the StableHLO-level
    function itself.

Measured: lowering + compile time, and run time per call (compiled, inputs
on the device), on W1's MLP loss (no control flow), and whether (b) works at
all on a program with a data-dependent `while` (W3b-like RNN): JAX cannot
reverse-differentiate `lax.while_loop`, which is why (a) is kept. Usage:
`python benchmarks/xla_grad_paths.py [--calls N]`.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import d2s
import d2s.nn.functional as F
from d2s import nn, static
from d2s.backends.xla._jax import jax, x64
from d2s.backends.xla.errors import ErrorSites
from d2s.backends.xla.lowering import Lowerer, lower_program
from d2s.backends.xla.program import XlaProgram


def _mlp_loss_program(rng):
    mlp = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                        nn.Linear(128, 10))
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [32, 784], "float32")
        label = static.data("label", [32], "int64")
        loss = F.cross_entropy(mlp(x), label)
        pairs = static.append_backward(loss, mlp.parameters())
    feeds = [rng.normal(size=(32, 784)).astype(np.float32),
             rng.integers(0, 10, size=32).astype(np.int64)]
    return prog, loss, [g for _, g in pairs], feeds


def _rnn_loss_program(rng):
    cell = nn.Linear(16, 16)
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [4, 16], "float32")
        steps = static.data("steps", [], "int64")

        def body(i, h):
            return i + 1, d2s.tanh(cell(h + x))

        _, h = static.nn.while_loop(lambda i, h: i < steps, body,
                                    [d2s.zeros([], "int64"), x])
        loss = (h * h).mean()
    feeds = [rng.normal(size=(4, 16)).astype(np.float32), np.array(5, np.int64)]
    return prog, loss, cell.parameters(), feeds


def _jax_forward(xp, loss_name):
    """The forward program lowered as a pure JAX function of (feeds..., params...)."""
    n_feeds = len(xp.feed_names)

    def f(*args):
        low = Lowerer(xp.program, xp.blocks, ErrorSites(), xp.room)
        env = lower_program(low, dict(zip(xp.feed_names, args[:n_feeds])),
                            dict(zip(xp.param_names, args[n_feeds:])))
        return env.get(loss_name)
    return f


def _timed(fn, calls):
    fn()
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            out = fn()
        jax.block_until_ready(out)
        best.append((time.perf_counter() - t0) / calls)
    return float(np.median(best))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300,
                        help="calls per timing; the median of the rounds is printed (default 300)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    prog, loss, grads, feeds = _mlp_loss_program(rng)
    fetch = [loss.name] + [g.name for g in grads]
    with x64():
        # (a) the backward program, lowered with the forward
        t0 = time.perf_counter()
        xp_a = XlaProgram(prog, ["x", "label"], fetch)
        want = xp_a(feeds)
        compile_a = time.perf_counter() - t0
        exe = xp_a.executable(feeds)
        dev = [jax.device_put(a) for a in feeds] + xp_a.params.device_values()
        run_a = _timed(lambda: exe.compiled(*dev), args.calls)

        # (b) jax.vjp of the lowered forward
        t0 = time.perf_counter()
        xp_f = XlaProgram(prog, ["x", "label"], [loss.name],
                          ops=prog.global_block().ops[:_n_forward(prog, loss)])
        f = _jax_forward(xp_f, loss.name)
        n = len(feeds)
        grad_fn = jax.jit(jax.value_and_grad(f, argnums=tuple(range(n, n + len(grads)))))
        dev_b = [jax.device_put(a) for a in feeds] + xp_f.params.device_values()
        value, got = grad_fn(*dev_b)
        jax.block_until_ready(got)
        compile_b = time.perf_counter() - t0
        run_b = _timed(lambda: grad_fn(*dev_b), args.calls)
    err = max(float(np.max(np.abs(np.asarray(g) - w) / (np.abs(w).max() + 1e-30)))
              for g, w in zip(got, want[1:]))
    print("W1 MLP loss + gradients of its 6 parameters (float32, batch 32)")
    print(f"  (a) d2s backward lowered: first call {compile_a * 1e3:7.1f} ms, "
          f"run {run_a * 1e6:6.1f} µs")
    print(f"  (b) jax.vjp of forward  : first call {compile_b * 1e3:7.1f} ms, "
          f"run {run_b * 1e6:6.1f} µs   (gradients agree to {err:.1e} of their scale)")

    prog, loss, params, feeds = _rnn_loss_program(rng)
    with x64():
        xp_f = XlaProgram(prog, ["x", "steps"], [loss.name])
        f = _jax_forward(xp_f, loss.name)
        try:
            jax.jit(jax.grad(f, argnums=2))(*[jax.device_put(a) for a in feeds],
                                              *xp_f.params.device_values())
            verdict = "works"
        except Exception as e:  # JAX refuses reverse mode through lax.while_loop
            verdict = f"fails: {type(e).__name__}: {str(e).splitlines()[0][:90]}"
        pairs = None
        with static.program_guard(prog):
            pairs = static.append_backward(loss, params)
        xp_a = XlaProgram(prog, ["x", "steps"], [loss.name] + [g.name for _, g in pairs])
        xp_a(feeds)
    print("RNN with a data-dependent while (W3b-like)")
    print(f"  (b) jax.grad of the lowered forward: {verdict}")
    print("  (a) d2s backward lowered: works (while_grad over the saved per-trip history)")


def _n_forward(prog, loss):
    ops = prog.global_block().ops
    for i, op in enumerate(ops):
        if any(v is loss for v in op.outputs):
            return i + 1
    return len(ops)


if __name__ == "__main__":
    main()
