"""Benchmark workloads: each written once as ordinary d2s code, plus a numpy twin.

Every workload is a `Workload` whose `call()` runs the d2s code. Because
that code goes through a `StaticFunction`, the same `call()` runs a cached
static program when `d2s.jit.enable_to_static(True)` and the original Python
eagerly when it is False. `numpy_call()` is the hand-written numpy version
(idiomatic numpy, in-place where that is the obvious way to write it): the
floor for a numpy-backed runtime. `fresh_call()` builds a new `to_static`
wrapper of the same code and calls it once (first-call cost: convert, trace,
build, run).

Forward-only workloads run under `d2s.no_grad()` in both d2s modes (that is
how inference is written); W6 is a full training step with gradients (W6a the
same step with only the forward converted).
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static

F32 = np.float32


@dataclass
class Workload:
    key: str
    title: str
    call: Callable[[], Any]                 # d2s code (eager or static by the switch)
    numpy_call: Callable[[], Any]
    fresh_call: Callable[[], Callable[[], Any]]  # new to_static wrapper -> zero-arg call
    no_grad: bool = True
    reset: Callable[[], None] = lambda: None  # restore mutable state (weights)
    state: Callable[[str], list] = lambda mode: []  # extra arrays to compare (weights)
    rtol: float = 1e-5
    atol: float = 1e-6
    info: dict = field(default_factory=dict)
    np_args: tuple = ()   # the numpy inputs/weights, copied at setup (for torch/jax twins)
    # (to_static function or Layer, example arguments): what the ONNX Runtime
    # column exports (benchmarks/onnx_runtime.py); empty for training workloads
    program: tuple = ()


def arrays(result):
    """Flatten a result (Tensor, ndarray, number, tuple/list of those) to ndarrays."""
    if isinstance(result, (tuple, list)):
        out = []
        for r in result:
            out.extend(arrays(r))
        return out
    if hasattr(result, "numpy") and not isinstance(result, np.ndarray):
        return [np.array(result.numpy(), copy=True)]
    return [np.array(result, copy=True)]


def _fresh_method(layer, method_name):
    """A new StaticFunction for `layer.<method_name>` (same code, empty caches)."""
    raw = getattr(type(layer), method_name).dygraph_function
    return to_static(types.MethodType(raw, layer))


# ---- W1 / W4: MLP forward ---------------------------------------------------------------

class MLP(nn.Layer):
    """Linear-ReLU-Linear-ReLU-Linear."""

    def __init__(self, n_in, hidden1, hidden2, n_out):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden1)
        self.fc2 = nn.Linear(hidden1, hidden2)
        self.fc3 = nn.Linear(hidden2, n_out)

    @to_static
    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        return self.fc3(h)


def mlp_params(model):
    return [p.numpy().copy() for p in (model.fc1.weight, model.fc1.bias, model.fc2.weight,
                                       model.fc2.bias, model.fc3.weight, model.fc3.bias)]


def mlp_numpy(x, w1, b1, w2, b2, w3, b3):
    h = x @ w1
    h += b1
    np.maximum(h, 0, out=h)
    h = h @ w2
    h += b2
    np.maximum(h, 0, out=h)
    out = h @ w3
    out += b3
    return out


def _mlp_workload(key, title, batch, sizes, rng):
    model = MLP(*sizes)
    x_np = rng.normal(size=(batch, sizes[0])).astype(F32)
    x = d2s.to_tensor(x_np)
    params = mlp_params(model)
    return Workload(
        key, title,
        call=lambda: model(x),
        numpy_call=lambda: mlp_numpy(x_np, *params),
        fresh_call=lambda: (lambda f: (lambda: f(x)))(_fresh_method(model, "forward")),
        info={"batch": batch, "sizes": list(sizes)}, np_args=(x_np, *params),
        program=(model, (x,)))


def w1(rng):
    return _mlp_workload("W1", "MLP 32x784-128-128-10", 32, (784, 128, 128, 10), rng)


def w4(rng):
    w = _mlp_workload("W4", "MLP 512x1024-1024-1024-10", 512, (1024, 1024, 1024, 10), rng)
    w.rtol, w.atol = 1e-4, 1e-5
    return w


# ---- W2: data-dependent while ----------------------------------------------------------

@to_static
def grow(x, limit):
    steps = d2s.zeros([], "int64")
    while x.sum() < limit:
        x = x * 1.05 + 0.01
        steps = steps + 1
    return x, steps


def grow_numpy(x, limit):
    steps = 0
    while x.sum() < limit:
        x = x * F32(1.05) + F32(0.01)
        steps += 1
    return x, np.int64(steps)


def w2(rng):
    x_np = rng.uniform(0.5, 1.5, size=64).astype(F32)
    limit = 3500.0
    x = d2s.to_tensor(x_np)
    trips = int(grow_numpy(x_np, limit)[1])
    return Workload(
        "W2", f"while x.sum()<limit ({trips} trips)",
        call=lambda: grow(x, limit),
        numpy_call=lambda: grow_numpy(x_np, limit),
        fresh_call=lambda: (lambda f: (lambda: f(x, limit)))(to_static(grow.dygraph_function)),
        info={"shape": [64], "limit": limit, "trips": trips}, np_args=(x_np, limit),
        program=(grow, (x, limit)))


# ---- W3 / W3b: RNN ---------------------------------------------------------------------

class RNN(nn.Layer):
    """Elman RNN, h = tanh(x_t @ Wx + h @ Wh + b), over x of shape (T, batch, n_in)."""

    def __init__(self, n_in, hidden):
        super().__init__()
        self.hidden = hidden
        self.wx = self.create_parameter([n_in, hidden])
        self.wh = self.create_parameter([hidden, hidden])
        self.b = self.create_parameter([hidden], is_bias=True)

    @to_static
    def forward(self, x):
        # T = x.shape[0] is a Python int: the static program unrolls the loop.
        h = d2s.zeros([x.shape[1], self.hidden])
        for t in range(x.shape[0]):
            h = d2s.tanh(x[t] @ self.wx + h @ self.wh + self.b)
        return h

    @to_static
    def forward_n(self, x, n):
        # n is an int64 tensor: the loop becomes one `while` op.
        h = d2s.zeros([x.shape[1], self.hidden])
        for t in range(n):
            h = d2s.tanh(x[t] @ self.wx + h @ self.wh + self.b)
        return h


def rnn_numpy(x, n, wx, wh, b):
    h = np.zeros((x.shape[1], wh.shape[0]), F32)
    for t in range(n):
        z = x[t] @ wx
        z += h @ wh
        z += b
        h = np.tanh(z, out=z)
    return h


T, BATCH, N_IN, HIDDEN = 32, 16, 128, 128


def _rnn_setup(rng):
    model = RNN(N_IN, HIDDEN)
    model.set_state_dict({k: rng.normal(scale=0.1, size=p.shape).astype(F32)
                          for k, p in model.state_dict().items()})
    x_np = rng.normal(size=(T, BATCH, N_IN)).astype(F32)
    params = [model.wx.numpy().copy(), model.wh.numpy().copy(), model.b.numpy().copy()]
    return model, x_np, d2s.to_tensor(x_np), params


def w3(rng):
    model, x_np, x, params = _rnn_setup(rng)
    return Workload(
        "W3", f"RNN T={T} (unrolled) b{BATCH} h{HIDDEN}",
        call=lambda: model(x),
        numpy_call=lambda: rnn_numpy(x_np, T, *params),
        fresh_call=lambda: (lambda f: (lambda: f(x)))(_fresh_method(model, "forward")),
        rtol=1e-4, atol=1e-5,
        info={"T": T, "batch": BATCH, "n_in": N_IN, "hidden": HIDDEN},
        np_args=(x_np, T, *params), program=(model, (x,)))


def w3b(rng):
    model, x_np, x, params = _rnn_setup(rng)
    n = d2s.to_tensor(np.int64(T))
    return Workload(
        "W3b", f"RNN T=tensor (while) b{BATCH} h{HIDDEN}",
        call=lambda: model.forward_n(x, n),
        numpy_call=lambda: rnn_numpy(x_np, T, *params),
        fresh_call=lambda: (lambda f: (lambda: f(x, n)))(_fresh_method(model, "forward_n")),
        rtol=1e-4, atol=1e-5,
        info={"T": T, "batch": BATCH, "n_in": N_IN, "hidden": HIDDEN},
        np_args=(x_np, T, *params), program=(model.forward_n, (x, n)))


# ---- W5: branchy -----------------------------------------------------------------------

@to_static
def branchy(x):
    if x.mean() > 0:
        x = x * 2.0
    else:
        x = -x
    if x.max() > 3.0:
        y = d2s.tanh(x) + x * 0.1
    else:
        y = x * 0.5 - 1.0
    return y


def branchy_numpy(x):
    if x.mean() > 0:
        x = x * F32(2.0)
    else:
        x = -x
    if x.max() > 3.0:
        y = np.tanh(x)
        y += x * F32(0.1)
    else:
        y = x * F32(0.5)
        y -= F32(1.0)
    return y


def w5(rng):
    x_np = rng.normal(size=(32, 256)).astype(F32)
    x = d2s.to_tensor(x_np)
    return Workload(
        "W5", "branchy: 2 tensor ifs, 32x256",
        call=lambda: branchy(x),
        numpy_call=lambda: branchy_numpy(x_np),
        fresh_call=lambda: (lambda f: (lambda: f(x)))(to_static(branchy.dygraph_function)),
        info={"shape": [32, 256], "mean_positive": bool(x_np.mean() > 0)}, np_args=(x_np,),
        program=(branchy, (x,)))


# ---- W6 / W6a: one training step of W1 -------------------------------------------------

class MLPLoss(nn.Layer):
    """W1's MLP plus cross-entropy: to_static makes this one program whose
    backward is the static backward program."""

    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    @to_static
    def forward(self, x, label):
        return F.cross_entropy(self.mlp(x), label)


def make_train_step(loss_fn, opt):
    """The training step as one writes it eagerly. W6 converts the whole step
    (`to_static(make_train_step(...))`: forward, backward, SGD update and
    clear_grad are one program); W6a calls it as plain Python, so only
    `loss_fn`'s forward is converted (its backward is one tape node, the
    optimizer steps eagerly)."""
    def train_step(x, label):
        loss = loss_fn(x, label)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    return train_step


def train_step_numpy(p, x, label, lr):
    """Forward, mean softmax cross-entropy, backward, SGD; updates `p` in place."""
    w1, b1, w2, b2, w3, b3 = p
    n = x.shape[0]
    h1 = x @ w1
    h1 += b1
    np.maximum(h1, 0, out=h1)
    h2 = h1 @ w2
    h2 += b2
    np.maximum(h2, 0, out=h2)
    z = h2 @ w3
    z += b3
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(n)
    loss = np.log(s[:, 0]).mean() - z[rows, label].mean()
    dz = e / s                       # softmax
    dz[rows, label] -= 1
    dz *= F32(1.0 / n)
    dh2 = dz @ w3.T
    dh2 *= h2 > 0
    dh1 = dh2 @ w2.T
    dh1 *= h1 > 0
    w3 -= lr * (h2.T @ dz)
    b3 -= lr * dz.sum(axis=0)
    w2 -= lr * (h1.T @ dh2)
    b2 -= lr * dh2.sum(axis=0)
    w1 -= lr * (x.T @ dh1)
    b1 -= lr * dh1.sum(axis=0)
    return F32(loss)


def _w6(key, title, whole_step, rng):
    lr = 0.01
    mlp = MLP(784, 128, 128, 10)
    model = MLPLoss(mlp)
    opt = d2s.optimizer.SGD(learning_rate=lr, parameters=model.parameters())
    x_np = rng.normal(size=(32, 784)).astype(F32)
    y_np = rng.integers(0, 10, size=32).astype(np.int64)
    x, y = d2s.to_tensor(x_np), d2s.to_tensor(y_np)
    initial = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    np_params = mlp_params(mlp)

    def reset():
        model.set_state_dict(initial)
        for dst, src in zip(np_params, mlp_params(mlp)):
            dst[...] = src

    def state(mode):
        return np_params if mode == "numpy" else mlp_params(mlp)

    if whole_step:
        step = to_static(make_train_step(model, opt))
        fresh = lambda: (lambda f: (lambda: f(x, y)))(to_static(make_train_step(model, opt)))
    else:
        step = make_train_step(model, opt)
        fresh = lambda: (lambda f: (lambda: make_train_step(f, opt)(x, y)))(
            _fresh_method(model, "forward"))
    return Workload(
        key, title,
        call=lambda: step(x, y),
        numpy_call=lambda: train_step_numpy(np_params, x_np, y_np, F32(lr)),
        fresh_call=fresh,
        no_grad=False, reset=reset, state=state, rtol=1e-4, atol=1e-6,
        info={"batch": 32, "sizes": [784, 128, 128, 10], "optimizer": "SGD", "lr": lr,
              "converted": "whole step" if whole_step else "forward only"},
        np_args=([p.copy() for p in np_params], x_np, y_np, F32(lr)))


def w6(rng):
    return _w6("W6", "train step of W1 (CE + SGD), whole step converted", True, rng)


def w6a(rng):
    return _w6("W6a", "train step of W1, forward-only converted", False, rng)


# ---- cache hit of a one-add function -----------------------------------------------------

def make_add(y):
    def add_y(x):
        return x + y
    return add_y


def add_workload(rng):
    y_np = rng.normal(size=(16,)).astype(F32)
    x_np = rng.normal(size=(16,)).astype(F32)
    add_y = make_add(d2s.to_tensor(y_np))
    static_add = to_static(add_y)
    x = d2s.to_tensor(x_np)
    return Workload(
        "ADD", "cache hit: f(x) = x + y, [16]",
        call=lambda: static_add(x),
        numpy_call=lambda: x_np + y_np,
        fresh_call=lambda: (lambda f: (lambda: f(x)))(to_static(make_add(d2s.to_tensor(y_np)))),
        info={"shape": [16]}, np_args=(x_np, y_np))


# ---- W7: one training step of a small CNN ---------------------------------------------

class SmallCNN(nn.Layer):
    """Conv3x3-BN-ReLU-MaxPool2 three times (3->16->32->64 channels), then a
    Linear head: how a CIFAR-sized classifier is written."""

    def __init__(self, classes=10):
        super().__init__()
        layers = []
        for cin, cout in ((3, 16), (16, 32), (32, 64)):
            layers += [nn.Conv2D(cin, cout, 3, padding=1, bias_attr=False),
                       nn.BatchNorm2D(cout), nn.ReLU(), nn.MaxPool2D(2, 2)]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(64 * 4 * 4, classes)

    def forward(self, x, label):
        h = self.features(x)
        return F.cross_entropy(self.head(h.flatten(1)), label)


def cnn_params(model):
    """[conv, gamma, beta] * 3 + [head w, head b], copied (cnn_numpy's order)."""
    out = []
    for k in range(3):
        conv, bn = model.features[4 * k], model.features[4 * k + 1]
        out += [conv.weight.numpy().copy(), bn.weight.numpy().copy(), bn.bias.numpy().copy()]
    return out + [model.head.weight.numpy().copy(), model.head.bias.numpy().copy()]


def w7(rng):
    """W7: the CNN's SGD training step, whole step converted; the numpy twin
    is benchmarks/cnn_numpy.py (the torch / jax twins: others.py)."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.append(here)
    import cnn_numpy
    lr = 0.01
    model = SmallCNN()
    opt = d2s.optimizer.SGD(learning_rate=lr, parameters=model.parameters())
    x_np = rng.normal(size=(32, 3, 32, 32)).astype(F32)
    y_np = rng.integers(0, 10, size=32).astype(np.int64)
    x, y = d2s.to_tensor(x_np), d2s.to_tensor(y_np)
    initial = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    np_params = cnn_params(model)
    running = [[np.zeros(c, F32), np.ones(c, F32)] for c in (16, 32, 64)]

    def reset():
        model.set_state_dict(initial)
        for dst, src in zip(np_params, cnn_params(model)):
            dst[...] = src

    step = to_static(make_train_step(model, opt))
    return Workload(
        "W7", "small CNN train step (3x conv-BN-ReLU-pool + linear, SGD)",
        call=lambda: step(x, y),
        numpy_call=lambda: cnn_numpy.train_step(np_params, running, x_np, y_np, F32(lr)),
        fresh_call=lambda: (lambda f: (lambda: f(x, y)))(to_static(make_train_step(model, opt))),
        no_grad=False, reset=reset,
        state=lambda mode: np_params if mode == "numpy" else cnn_params(model),
        # (batch norm sums 32x32x32 float32 values per channel: the orders of
        # numpy, XLA and oneDNN differ by ~1e-5 in the updated weights)
        rtol=1e-3, atol=1e-4,
        info={"batch": 32, "input": [3, 32, 32], "channels": [16, 32, 64],
              "optimizer": "SGD", "lr": lr},
        np_args=([p.copy() for p in np_params], x_np, y_np, F32(lr)))


# ---- W8: greedy generation of a small Llama ----------------------------------------------

def w8(rng):
    """examples/llama's generate.py, greedy: the prompt pass, then a tensor
    `while` of decode steps over per-layer k/v caches; converted, the whole
    generation is one program. The numpy twin is benchmarks/llm_peers.py's
    hand-written loop over the same weights (benchmarks/llm.py times the
    full-size model against PyTorch, jax.jit and ONNX Runtime)."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in (here, os.path.dirname(here)):        # llm_peers; examples.llama
        if folder not in sys.path:
            sys.path.append(folder)
    import llm_peers
    from examples.llama.export_onnx import GreedyGenerator
    from examples.llama.generate import generate
    from examples.llama.model import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=32)
    model = LlamaForCausalLM(config)
    model.eval()
    new = 16
    prompt_np = rng.integers(0, config.vocab_size, (1, 8)).astype(np.int64)
    prompt = d2s.to_tensor(prompt_np)
    gen = to_static(generate)
    by_hand = llm_peers.numpy_greedy_fn(model)
    return Workload(
        "W8", f"Llama greedy, {new} tokens, 2 layers x 64",
        call=lambda: gen(model, prompt, new, temperature=0),
        numpy_call=lambda: by_hand(prompt_np, new),
        fresh_call=lambda: (lambda f: (lambda: f(model, prompt, new, temperature=0)))(
            to_static(generate)),
        rtol=0, atol=0, info={"new_tokens": new, "prompt": [1, 8], "config": config.to_dict()},
        np_args=(prompt_np,), program=(GreedyGenerator(model, new), (prompt,)))


# key -> builder(rng); in run order.
WORKLOADS = {
    "W1": w1, "W2": w2, "W3": w3, "W3b": w3b, "W4": w4, "W5": w5, "W6": w6, "W6a": w6a,
    "ADD": add_workload, "W8": w8, "W7": w7,
}
