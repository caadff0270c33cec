"""Models, data and runs shared by the distributed tests."""
import os

import numpy as np
import pytest

import d2s
import d2s.distributed as dist
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import optimizer, static

DIST_TESTS = os.environ.get("D2S_DIST_TESTS") == "1"
DEVICES = 8  # simulated CPU devices (set in conftest)

heavy = pytest.mark.skipif(not DIST_TESTS, reason="distributed suite: run with "
                           "D2S_DIST_TESTS=1 python -m pytest tests/distributed")


class MLP(nn.Layer):
    """The example MLP (examples/train.py): 2 -> 32 -> 3, ReLU."""

    def __init__(self, n_in=2, hidden=32, n_out=3):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def make_mlp(seed=0, dtype="float32"):
    d2s.seed(seed)
    model = MLP()
    if dtype != "float32":
        for p in model.parameters():
            p._value = p._value.astype(dtype)
    return model


def blobs(n, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 2.0], [2.0, -1.0], [-2.0, -1.0]])
    y = rng.integers(0, 3, size=n)
    x = centers[y] + 0.7 * rng.standard_normal((n, 2))
    return x.astype(dtype), y.astype(np.int64)


def megatron(mesh, axis):
    """shard_fn: fc1 column-parallel (weight Shard(1), bias Shard(0)), fc2
    row-parallel (weight Shard(0)) along mesh dim `axis`; the rest replicated."""
    def place(*dims):
        out = [dist.Replicate()] * mesh.ndim
        for d in dims:
            out[mesh.dim_names.index(axis)] = dist.Shard(d)
        return out

    def shard_fn(name, layer, m):
        if name == "fc1":
            layer.weight = dist.shard_tensor(layer.weight, m, place(1))
            layer.bias = dist.shard_tensor(layer.bias, m, place(0))
        elif name == "fc2":
            layer.weight = dist.shard_tensor(layer.weight, m, place(0))
    return shard_fn


def train_program(model, opt_name, lr=0.1, batch=16):
    """A static training step (forward, backward, update): (program, loss)."""
    params = model.parameters()
    opt = optimizer.SGD(learning_rate=lr, parameters=params) if opt_name == "sgd" else \
        optimizer.Adam(learning_rate=lr * 0.1, parameters=params)
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [batch, 2])
        y = static.data("y", [batch], "int64")
        loss = F.cross_entropy(model(x), y)
        opt.minimize(loss)
    return prog, loss


def train(model, opt_name, steps, backend=None, x_place=None, batch=16):
    """Losses of `steps` training steps on the same batch; `x_place`: (mesh,
    placements) of the fed batch (labels: Shard(0) on the same mesh dim)."""
    prog, loss = train_program(model, opt_name, batch=batch)
    x_np, y_np = blobs(batch)
    x, y = x_np, y_np
    if x_place is not None:
        mesh, placements = x_place
        x = dist.shard_tensor(x_np, mesh, placements)
        y = dist.shard_tensor(y_np, mesh, placements)
    exe = static.Executor(backend=backend)
    return np.array([exe.run(prog, {"x": x, "y": y}, [loss])[0] for _ in range(steps)])
