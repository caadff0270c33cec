"""A model saved with `jit.save` and loaded with `jit.load` can be called,
differentiated and fine-tuned, in the same process and in a fresh one, on
the numpy and xla backends (issue 25 item 5). Found here: in a fresh process
the backward of a loaded program of a few layers failed ("a variable named
'multiply_23' already exists in block 0"): its new ops took names from a
counter that restarted at 0 next to the saved names."""
import copy
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.static import InputSpec
from d2s import backends as backend_state

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Model(nn.Layer):
    """Six Linear layers, a LayerNorm and a tensor `if`."""

    def __init__(self):
        super().__init__()
        self.body = nn.LayerList([nn.Linear(4, 6)] + [nn.Linear(6, 6) for _ in range(4)])
        self.norm = nn.LayerNorm(6)
        self.head = nn.Linear(6, 2)

    def forward(self, x):
        for layer in self.body:
            x = d2s.tanh(layer(x))
        h = self.norm(x)
        if h.abs().max() > 0.5:  # not h.mean(): ~0 after a LayerNorm, its sign is noise
            h = h * 2
        else:
            h = h - 1
        return self.head(h)


X = np.random.RandomState(0).randn(3, 4).astype("float32")
TARGET = np.random.RandomState(1).randn(3, 2).astype("float32")


def _fine_tune(model, steps=3):
    """Losses, input gradient and final weights of `steps` SGD steps (eager)."""
    opt = d2s.optimizer.SGD(learning_rate=0.05, parameters=model.parameters())
    losses, x_grad = [], None
    for _ in range(steps):
        x = d2s.to_tensor(X, stop_gradient=False)
        loss = ((model(x) - d2s.to_tensor(TARGET)) ** 2).mean()
        loss.backward()
        x_grad = x_grad if x_grad is not None else x.grad.numpy().copy()
        losses.append(float(loss.numpy()))
        opt.step()
        opt.clear_grad()
    weights = sorted(p.numpy().ravel().tolist() for p in model.parameters())
    return {"losses": losses, "x_grad": x_grad.tolist(), "weights": weights}


def _compare(got, want):
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-5)
    np.testing.assert_allclose(got["x_grad"], want["x_grad"], rtol=1e-4, atol=1e-6)
    for a, b in zip(got["weights"], want["weights"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


_FRESH = """
import json, sys
sys.path.insert(0, sys.argv[3])
import d2s
from test_loaded_programs import _fine_tune
print(json.dumps(_fine_tune(d2s.jit.load(sys.argv[1]))))
"""


@pytest.fixture
def saved(tmp_path):
    d2s.seed(11)
    model = Model()
    eager = copy.deepcopy(model)
    path = str(tmp_path / "model")
    d2s.jit.save(model, path, input_spec=[InputSpec([None, 4])])
    return path, _fine_tune(eager)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_loaded_model_fine_tunes_in_this_process(saved, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    path, want = saved
    previous = backend_state.get_backend()
    backend_state.set_backend(backend)
    try:
        loaded = d2s.jit.load(path)
        _compare(_fine_tune(loaded), want)
    finally:
        backend_state.set_backend(previous)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_loaded_model_fine_tunes_in_a_fresh_process(saved, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    path, want = saved
    env = dict(os.environ, D2S_BACKEND=backend,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _FRESH, path, "", os.path.dirname(__file__)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _compare(json.loads(proc.stdout.strip().splitlines()[-1]), want)


def test_a_loaded_model_inside_converted_code_is_a_clear_error(saved):
    path, _ = saved
    loaded = d2s.jit.load(path)

    @d2s.jit.to_static
    def twice(x):
        return loaded(x) * 2

    with pytest.raises(TypeError, match="loaded with d2s.jit.load.*call it outside"):
        twice(d2s.to_tensor(X))
