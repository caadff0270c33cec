"""d2s demo: one model, run eagerly and as a static program, side by side.

    python examples/demo.py

1. Inference: the same MLP forward pass, eager vs a Program run by the Executor.
2. Training: the same Adam training loop, eager `loss.backward(); opt.step()`
   vs a Program built once with `opt.minimize(loss)` (each run is one step),
   from the same initial weights.
3. Control flow in a program: `cond` and `while_loop`.
"""
import time

import numpy as np

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import optimizer, static


def make_model():
    d2s.seed(0)  # same initial weights every time
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(),
                         nn.Linear(64, 10))


def timed(fn, repeat):
    fn()  # warm up
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    return out, (time.perf_counter() - t0) / repeat * 1e3


def inference(x_np):
    model = make_model()
    eager_out, eager_ms = timed(lambda: model(d2s.to_tensor(x_np)).numpy(), 200)

    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [None, 32])
        out = model(x)
    exe = static.Executor()
    static_out, static_ms = timed(lambda: exe.run(prog, {"x": x_np}, [out])[0], 200)
    return eager_out, static_out, eager_ms, static_ms, prog


def training(x_np, y_np, steps=50):
    model = make_model()
    opt = optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    t0 = time.perf_counter()
    eager_losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(d2s.to_tensor(x_np)), d2s.to_tensor(y_np))
        loss.backward()
        opt.step()
        opt.clear_grad()
        eager_losses.append(loss.item())
    eager_ms = (time.perf_counter() - t0) / steps * 1e3

    model = make_model()
    opt = optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [None, 32])
        y = static.data("y", [None], "int64")
        loss = F.cross_entropy(model(x), y)
        opt.minimize(loss)
    exe = static.Executor()
    t0 = time.perf_counter()
    static_losses = [float(exe.run(prog, {"x": x_np, "y": y_np}, [loss])[0])
                     for _ in range(steps)]
    static_ms = (time.perf_counter() - t0) / steps * 1e3
    return np.array(eager_losses), np.array(static_losses), eager_ms, static_ms


def control_flow():
    prog = static.Program()
    with static.program_guard(prog):
        n = static.data("n", [], "int64")
        i, total = static.nn.while_loop(lambda i, s: i < n,
                                        lambda i, s: (i + 1, s + i * i),
                                        [d2s.zeros([], "int64"), d2s.zeros([], "int64")])
        parity = static.nn.cond(total % 2 == 0, lambda: d2s.full([], 0, "int64"),
                                lambda: d2s.full([], 1, "int64"))
    exe = static.Executor()
    for n_val in (3, 4):
        eager_total = sum(k * k for k in range(n_val))
        got_total, got_parity = exe.run(prog, {"n": np.int64(n_val)}, [total, parity])
        print(f"  n={n_val}: sum of squares {int(got_total)} (python: {eager_total}), "
              f"parity {int(got_parity)}")


def main():
    rng = np.random.default_rng(0)
    x_np = rng.normal(size=(64, 32)).astype("float32")
    y_np = rng.integers(0, 10, size=64)

    eager_out, static_out, e_ms, s_ms, prog = inference(x_np)
    print("== inference: MLP 32-64-64-10, batch 64 ==")
    print(f"  program: {len(prog.global_block().ops)} ops, "
          f"{len(prog.captured)} captured parameters")
    print(f"  {'':8}{'eager':>12}{'static':>12}")
    print(f"  {'ms/call':8}{e_ms:12.3f}{s_ms:12.3f}")
    print(f"  max |eager - static| = {np.max(np.abs(eager_out - static_out)):.2e}")

    el, sl, e_ms, s_ms = training(x_np, y_np)
    print("\n== training: Adam, 50 steps, same initial weights ==")
    print(f"  {'step':>6}{'eager loss':>14}{'static loss':>14}")
    for i in (0, 9, 24, 49):
        print(f"  {i:6d}{el[i]:14.6f}{sl[i]:14.6f}")
    print(f"  {'ms/step':>6}{e_ms:14.3f}{s_ms:14.3f}")
    print(f"  max relative loss difference = {np.max(np.abs(el - sl) / np.abs(el)):.2e}")

    print("\n== control flow in a program: while_loop + cond ==")
    control_flow()


if __name__ == "__main__":
    main()
