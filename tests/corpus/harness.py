"""Shared runner for the model corpus (issue 25 item 6).

Each corpus file writes one small model the way it is ported from
PaddlePaddle or PyTorch and asks this module to compare the eager model with
the same model converted by `to_static`: losses, every parameter's gradient
and the parameters and buffers after several optimizer steps, on the numpy
backend (bitwise: the same kernels run) and on xla (close: XLA fuses and
reorders floating-point work). Keeping the comparison here keeps every model
file about the model.
"""
from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

import d2s
from d2s import optimizer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "jit"))
from no_variables_left import assert_no_variables_left  # noqa: E402

HAS_JAX = importlib.util.find_spec("jax") is not None
needs_jax = pytest.mark.skipif(not HAS_JAX, reason="the xla backend needs jax")
BACKENDS = [pytest.param("numpy", id="numpy"), pytest.param("xla", id="xla", marks=needs_jax)]
# xla compiles the same program but fuses and reorders float work
TOL = {"numpy": None, "xla": dict(rtol=2e-5, atol=2e-6)}


def t(a, dtype=None):
    a = np.asarray(a)
    if dtype is None:
        dtype = "float32" if a.dtype.kind == "f" else "int64"
    return d2s.to_tensor(a.astype(dtype))


def build(cls, *args, seed=0, **kwargs):
    """The model built from a fixed seed: two calls give two equal models."""
    d2s.seed(seed)
    np.random.seed(seed)
    return cls(*args, **kwargs)


def twins(cls, *args, **kwargs):
    """(eager model, model to convert) with identical parameters and buffers."""
    a = build(cls, *args, **kwargs)
    b = build(cls, *args, **kwargs)
    b.set_state_dict(a.state_dict())
    return a, b


def close(actual, expected, backend, what):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if TOL[backend] is None:
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(actual, expected, err_msg=what, **TOL[backend])


def as_numpy(value):
    if isinstance(value, (list, tuple)):
        return [as_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: as_numpy(v) for k, v in value.items()}
    if isinstance(value, d2s.Tensor):
        return value.numpy()
    return value


def close_tree(actual, expected, backend, what):
    if isinstance(expected, dict):
        assert set(actual) == set(expected), what
        for k in expected:
            close_tree(actual[k], expected[k], backend, f"{what}[{k!r}]")
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), f"{what}: {len(actual)} != {len(expected)} items"
        for i, (a, e) in enumerate(zip(actual, expected)):
            close_tree(a, e, backend, f"{what}[{i}]")
    elif expected is None or isinstance(expected, (int, float, bool, str)):
        assert actual == expected, what
    else:
        close(actual, expected, backend, what)


def make_optimizer(kind, model, lr=0.01):
    params = model.parameters()
    if kind == "sgd":
        return optimizer.SGD(learning_rate=lr, parameters=params)
    if kind == "adamw":
        return optimizer.AdamW(learning_rate=lr, parameters=params, weight_decay=0.01)
    return optimizer.Adam(learning_rate=lr, parameters=params)


def state(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


def grads(model):
    return {name: (None if p.grad is None else p.grad.numpy().copy())
            for name, p in model.named_parameters()}


def train_and_compare(cls, batches, backend, input_spec=None, loss=None, opt="adam", lr=0.01,
                      ctor=(), method=None, after=None):
    """Run `len(batches)` training steps on an eager model and on its twin
    whose `forward` (or `method`) is converted; compare loss, gradients and
    state after each step. `loss(model_output, *batch)` makes the scalar loss
    (eagerly, outside the program) when forward does not return it; a batch
    is a tuple of numpy arrays fed to the model after `t()`. `after(model,
    static)` runs extra checks. Returns the two models."""
    eager, model = twins(cls, *ctor)
    fn = getattr(model, method) if method else model.forward
    static_fn = d2s.jit.to_static(fn, input_spec=input_spec, backend=backend)
    call = {True: static_fn, False: getattr(eager, method) if method else eager}
    opts = {True: make_optimizer(opt, model, lr), False: make_optimizer(opt, eager, lr)}
    models = {True: model, False: eager}
    for step, batch in enumerate(batches):
        results = {}
        for static in (False, True):
            m = models[static]
            n_in = len(input_spec) if input_spec is not None else len(batch)
            inputs = [t(b) for b in batch[:n_in]]
            out = call[static](*inputs)
            value = out if loss is None else loss(out, *[t(b) for b in batch])
            value.backward()
            results[static] = (value.numpy(), grads(m))
            opts[static].step()
            opts[static].clear_grad()
            results[static] += (state(m),)
            if static:
                assert_no_variables_left(("model", m), ("inputs", inputs))
        close(results[True][0], results[False][0], backend, f"step {step}: loss")
        for name, g in results[False][1].items():
            if g is None:
                assert results[True][1][name] is None, f"step {step}: grad of {name}"
            else:
                assert results[True][1][name] is not None, f"step {step}: no grad for {name}"
                close(results[True][1][name], g, backend, f"step {step}: grad of {name}")
        close_tree(results[True][2], results[False][2], backend, f"step {step}: state")
    if after is not None:
        after(eager, model)
    return eager, model, static_fn


def infer_and_compare(fn_eager, fn_static, inputs, backend, what="output"):
    """Call an inference function eagerly and converted on the same inputs."""
    expected = as_numpy(fn_eager(*inputs))
    actual = as_numpy(fn_static(*inputs))
    close_tree(actual, expected, backend, what)
    return actual


def save_load_infer(layer, input_spec, inputs, tmp_path, backend="numpy"):
    """`jit.save` -> `jit.load` -> call: the loaded program gives the eager
    layer's output (the layer is in eval mode)."""
    layer.eval()
    expected = as_numpy(layer(*inputs))
    path = str(tmp_path / "model")
    d2s.jit.save(layer, path, input_spec=input_spec)
    loaded = d2s.jit.load(path)
    close_tree(as_numpy(loaded(*inputs)), expected, "numpy", "loaded program output")
    return loaded
