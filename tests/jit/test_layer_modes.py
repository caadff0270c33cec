"""A program depends on the `training` flags of every Layer its trace read,
not only on the bound Layer's: `model.eval()` after the first call of a
`to_static` function that closes over `model` (or takes it as an argument,
or is a method whose sublayer alone is switched) gets the eval program, as
eager code reads the flag on each call. Before, the first trace's mode held
for every later call: dropout stayed on in eval mode, silently.

Deterministic layers (`Scaled`: x * 2 while training, x in eval) compare
values with eager; Dropout compares the op types of the program each mode
gets.
"""
import numpy as np
import pytest

import d2s
from d2s import nn


class Scaled(nn.Layer):
    """x @ w, doubled in training mode: a Python branch on `self.training`."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        y = self.fc(x)
        if self.training:
            return y * 2.0
        return y


class Outer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.inner = Scaled()

    @d2s.jit.to_static
    def forward(self, x):
        return self.inner(x) + 1.0


def _x():
    return d2s.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))


def _same(static, eager):
    # (equal on numpy; the xla backend's matrix products round differently)
    np.testing.assert_allclose(static.numpy(), eager.numpy(), rtol=1e-6, atol=1e-6)


def test_a_closed_over_model_switched_to_eval_gets_the_eval_program():
    model = Scaled()

    @d2s.jit.to_static
    def infer(x):
        return model(x)

    x = _x()
    for mode in ("train", "eval", "train", "eval"):
        getattr(model, mode)()
        _same(infer(x), model(x))
    assert len(infer.program_cache) == 2  # one per mode, each reused


def test_a_layer_argument_switched_to_eval_gets_the_eval_program():
    @d2s.jit.to_static
    def apply(layer, x):
        return layer(x) - 1.0

    model, x = Scaled(), _x()
    _same(apply(model, x), model(x) - 1.0)
    model.eval()
    _same(apply(model, x), model(x) - 1.0)
    model.train()
    _same(apply(model, x), model(x) - 1.0)
    assert len(apply.program_cache) == 2


def test_a_method_whose_sublayer_alone_is_switched_gets_the_program_for_it():
    outer, x = Outer(), _x()
    eager = outer.forward.dygraph_function
    _same(outer(x), eager(x))
    outer.inner.eval()  # the bound Layer's own flag stays True
    assert outer.training
    _same(outer(x), eager(x))
    outer.inner.train()
    _same(outer(x), eager(x))
    assert len(outer.forward.program_cache) == 2


def test_dropout_is_in_the_train_program_and_not_in_the_eval_one():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))

    @d2s.jit.to_static
    def infer(x):
        return model(x)

    x = d2s.to_tensor(np.ones((2, 4), np.float32))

    def op_types():
        return {op.type for op in infer.concrete_program.main_program.all_ops()}

    infer(x)
    trained = op_types()
    model.eval()
    _same(infer(x), model(x))  # eval: no randomness, equal to eager
    assert "dropout" in trained and "dropout" not in op_types()


def test_python_values_keep_python_semantics_and_no_flag_means_one_program():
    # No Layer read: the flags never enter the key (no rebuild on eval()).
    @d2s.jit.to_static
    def double(x, k):
        return x * k

    model, x = Scaled(), _x()
    double(x, 3)
    model.eval()
    _same(double(x, 3), x * 3)
    assert len(double.program_cache) == 1
    assert double._mode_layers == []


def test_the_flag_a_trace_read_keys_the_program_it_built():
    # The first call traces in eval mode: that program serves eval calls and
    # a train call builds its own, though the Layer was unknown before.
    model = Scaled().eval()

    @d2s.jit.to_static
    def infer(x):
        return model(x)

    x = _x()
    _same(infer(x), model(x))
    _same(infer(x), model(x))
    assert len(infer.program_cache) == 1
    model.train()
    _same(infer(x), model(x))
    assert len(infer.program_cache) == 2


def _train_then_eval(to_static_on):
    d2s.seed(0)
    model = Scaled()

    @d2s.jit.to_static
    def infer(x):
        return model(x)

    x = _x()
    d2s.jit.enable_to_static(to_static_on)
    try:
        trained = infer(x).numpy()
        model.eval()
        return trained, infer(x).numpy()
    finally:
        d2s.jit.enable_to_static(True)


def test_switching_modes_gives_what_to_static_off_gives():
    static, eager = _train_then_eval(True), _train_then_eval(False)
    np.testing.assert_allclose(static[0], eager[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(static[1], eager[1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(static[0], 2.0 * static[1], rtol=1e-6)  # the modes differ
