"""Shared models and runners for the whole-step tests: each scenario runs the
same step function eagerly (`enable_to_static(False)`) and as one program,
from the same initial state, and compares with `np.array_equal`."""
import contextlib

import numpy as np

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import optimizer
from d2s.jit import InputSpec, enable_to_static

RNG = np.random.default_rng(0)
BATCHES = [(RNG.normal(size=(16, 6)).astype("float32"), RNG.integers(0, 4, 16))
           for _ in range(3)]
SEQUENCES = [(RNG.normal(size=(int(RNG.integers(2, 9)), 4)).astype("float32"),
              np.array([i % 2])) for i in range(5)]


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class RNN(nn.Layer):
    """Elman RNN over a sequence whose length is known only at run time: the
    `while` on a tensor condition is one `while` op in the program."""

    def __init__(self):
        super().__init__()
        self.w_in = nn.Linear(4, 8)
        self.w_h = nn.Linear(8, 8, bias_attr=False)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        h = d2s.zeros([1, 8])
        t = d2s.zeros([], "int64")
        while t < x.shape[0]:
            h = d2s.tanh(self.w_in(x[t:t + 1]) + self.w_h(h))
            t = t + 1
        return self.head(h)


RNN_SPEC = [InputSpec([None, 4], "float32"), InputSpec([1], "int64")]


def make(model_cls=MLP, kind="sgd", seed=0):
    d2s.seed(seed)
    model = model_cls()
    if kind == "sgd":
        opt = optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    else:
        opt = optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    return model, opt


def standard_step(model, opt):
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    return step


def accumulating_step(model, opt):
    """`standard_step` without `clear_grad`: gradients accumulate across calls."""
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def batch(i, data=BATCHES):
    x, y = data[i % len(data)]
    return d2s.to_tensor(x), d2s.to_tensor(y)


@contextlib.contextmanager
def eager_mode():
    enable_to_static(False)
    try:
        yield
    finally:
        enable_to_static(True)


def snapshot(model, opt):
    """Every array the step may change: values, gradients (None kept), optimizer state."""
    params = [p.numpy().copy() for p in model.parameters()]
    grads = [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]
    state = [t.numpy().copy() for _, ts in opt._state.values() for t in ts]
    return params, grads, state, opt.get_lr()


def same(a, b):
    """Bitwise equality of two snapshots (or lists of arrays / None); on the
    xla backend, whose rounding is XLA's, equality to rtol 1e-5 (float32) /
    1e-10 (float64) of each array's scale (DESIGN §8)."""
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float):  # (a loss read with .item(): float32 on xla too)
        return a == b if d2s.jit.get_backend() == "numpy" else (
            isinstance(b, float) and abs(a - b) <= 1e-5 * max(abs(a), abs(b)))
    if a.dtype != b.dtype:
        return False
    if d2s.jit.get_backend() == "numpy" or a.dtype.kind != "f":
        return np.array_equal(a, b)
    rtol = 1e-10 if a.dtype == np.float64 else 1e-5
    scale = float(np.abs(b).max()) if b.size else 0.0
    return np.allclose(a, b, rtol=rtol, atol=rtol * scale)


def run(make_step, model_cls=MLP, kind="sgd", steps=20, static=True, data=BATCHES, spec=None):
    """Losses and final snapshot of `steps` calls of the step built by `make_step`."""
    model, opt = make(model_cls, kind)
    step = d2s.jit.to_static(make_step(model, opt), input_spec=spec)
    ctx = contextlib.nullcontext() if static else eager_mode()
    with ctx:
        losses = [np.array(step(*batch(i, data)).numpy(), copy=True) for i in range(steps)]
    return losses, snapshot(model, opt), step


def both_modes(make_step, drive, model_cls=MLP, kind="sgd"):
    """`drive(step, model, opt)` with the step run eagerly, then as a program, each
    from the same fresh model: ([(its result, final snapshot)] eager then static,
    the static StaticFunction)."""
    results = []
    for static in (False, True):
        model, opt = make(model_cls, kind)
        step = d2s.jit.to_static(make_step(model, opt))
        with (contextlib.nullcontext() if static else eager_mode()):
            out = drive(step, model, opt)
        results.append((out, snapshot(model, opt)))
    return results, step


def outputs(value):
    """A step's outputs as copied arrays (a Tensor or a tuple of them)."""
    if isinstance(value, (tuple, list)):
        return [outputs(v) for v in value]
    return np.array(value.numpy(), copy=True)
