"""How the files beside this script were made: by d2s at commit f14062b
(program format version 1, before each control-flow op had one home).

They are kept as written so that tests/jit/test_legacy_programs.py proves that
programs saved by that code keep loading and giving the same numbers. Do not
regenerate them with newer code: that would test nothing. Each model is saved
with its inputs and the *eager* results and gradients (`<name>.ref.npz`).

    PYTHONPATH=. python tests/jit/legacy_programs/make.py
"""
import os

import numpy as np

import d2s
from d2s.jit import InputSpec, to_static

HERE = os.path.dirname(os.path.abspath(__file__))


class LoopNet(d2s.nn.Layer):
    """`while` (loop-carried counter and tensor) and `cond` around Linear layers."""

    def __init__(self):
        super().__init__()
        self.fc1 = d2s.nn.Linear(3, 4)
        self.fc2 = d2s.nn.Linear(4, 2)

    def forward(self, x, n):
        h = d2s.relu(self.fc1(x))
        i = 0
        while i < n:
            h = d2s.tanh(h) * 1.1
            i += 1
        if h.sum() > 0:
            return self.fc2(h)
        return -self.fc2(h)


class Collect(d2s.nn.Layer):
    """A name first assigned in a loop (`undefined`), a list appended to in
    the loop (tensor array), `raise` and `assert` in branches, and an early
    `return` inside the loop (a `cond` with a one-sided output)."""

    def __init__(self):
        super().__init__()
        self.fc = d2s.nn.Linear(2, 2)

    def forward(self, x, n):
        assert n >= 0, "n must not be negative"
        rows = []
        i = 0
        while i < n:
            last = self.fc(x) * (i + 1)
            rows.append(last)
            i += 1
        if x.sum() > 1000.0:
            raise ValueError("input too large")
        if n > 0:
            return d2s.stack(rows).sum(0) + last
        return x * 2.0


def first_large(v, limit):
    """An early return from inside a loop over rows."""
    total = v[0] * 0.0
    for row in v:
        total = total + row * row
        if total.sum() > limit:
            return total * 2.0
    return total


MODELS = {
    "loopnet": (LoopNet, [InputSpec([None, 3], "float32"), InputSpec([], "int64")],
                [(np.random.default_rng(0).normal(size=(5, 3)).astype("float32"), 3),
                 (np.random.default_rng(1).normal(size=(2, 3)).astype("float32"), 0)]),
    "collect": (Collect, [InputSpec([4, 2], "float32"), InputSpec([], "int64")],
                [(np.random.default_rng(2).normal(size=(4, 2)).astype("float32"), 3),
                 (np.random.default_rng(3).normal(size=(4, 2)).astype("float32"), 0)]),
    "first_large": (None, [InputSpec([None, 3], "float64"), InputSpec([], "float64")],
                    [(np.arange(12, dtype="float64").reshape(4, 3) / 10, 2.0),
                     (np.arange(12, dtype="float64").reshape(4, 3) / 10, 100.0)]),
}


def _eager(model, x, n):
    """Results and input gradients of the eager run (the reference)."""
    xt = d2s.to_tensor(x, stop_gradient=False)
    out = model(xt, d2s.to_tensor(n))
    (out * out).sum().backward()
    # None (no path to that parameter) is saved as NaN
    grads = [np.full(p.shape, np.nan, p.dtype) if p.grad is None else p.grad.numpy()
             for p in getattr(model, "parameters", lambda: [])()]
    return out.numpy(), xt.grad.numpy(), grads


def main():
    for name, (cls, spec, cases) in MODELS.items():
        d2s.seed(7)
        eager = cls() if cls is not None else first_large
        static = to_static(cls()) if cls is not None else to_static(first_large)
        if cls is not None:
            static.set_state_dict(eager.state_dict())
        d2s.jit.save(static, os.path.join(HERE, name), input_spec=spec)
        ref = {}
        for k, (x, n) in enumerate(cases):
            if cls is not None:
                for p in eager.parameters():
                    p.clear_grad()
            out, gx, grads = _eager(eager, x, np.asarray(n, spec[1].dtype))
            ref[f"x{k}"], ref[f"n{k}"] = x, np.asarray(n, spec[1].dtype)
            ref[f"out{k}"], ref[f"gx{k}"] = out, gx
            for j, g in enumerate(grads):
                ref[f"gp{k}_{j}"] = g
        np.savez(os.path.join(HERE, name + ".ref.npz"), **ref)


if __name__ == "__main__":
    main()
