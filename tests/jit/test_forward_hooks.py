"""`Layer.register_forward_pre_hook` / `register_forward_post_hook` with
PaddlePaddle's semantics, eagerly and inside converted forwards (issue 25
item 4), on the numpy and xla backends: outputs and gradients equal the
eager run's, hooks with tensor control flow are converted too, and adding
or removing a hook after a program was built is seen by the next call."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static

from model_code_helpers import assert_same_run, tensor


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x, scale=1.0):
        return self.fc(x) * scale


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        return self.head(d2s.tanh(self.block(x)))


def _double_inputs(layer, inputs):
    return (inputs[0] * 2,)


def _clip_outputs(layer, inputs, outputs):
    if outputs.sum() > 0:                  # a tensor `if` in a hook: converted
        return outputs - inputs[0].mean()
    return outputs * 0.5


def _returns_nothing(layer, inputs, outputs):
    layer.seen = True


def _model():
    d2s.seed(3)
    return Net()


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_hooks_run_inside_converted_forwards(backend, sign):
    if backend == "xla":
        pytest.importorskip("jax")
    model = _model()
    model.block.register_forward_pre_hook(_double_inputs)
    model.block.register_forward_post_hook(_clip_outputs)
    model.head.register_forward_post_hook(_returns_nothing)

    def run(x):
        return model(x)

    static = to_static(run, backend=backend)
    make = lambda: (tensor(sign * np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]]),  # noqa: E731
                           grad=True),)
    assert_same_run(static, run, make, grad_of=model.parameters())
    assert model.head.seen
    ops = {op.type for op in static.get_concrete_program(*make()).main_program.all_ops()}
    assert "cond" in ops


def test_a_hook_added_or_removed_after_a_build_is_seen():
    model = _model()
    static = to_static(lambda x: model(x))
    x = tensor([[1.0, 2.0, 3.0]])
    plain = static(x).numpy()
    handle = model.block.register_forward_pre_hook(_double_inputs)
    hooked = static(x).numpy()
    np.testing.assert_allclose(hooked, model(x).numpy(), rtol=1e-6)
    assert not np.allclose(hooked, plain)
    handle.remove()
    np.testing.assert_allclose(static(x).numpy(), plain, rtol=1e-6)
    handle.remove()  # a second remove does nothing


def test_hooks_of_a_converted_layer_and_their_order():
    calls = []
    model = _model()
    model.register_forward_pre_hook(lambda layer, inputs: calls.append("pre1"))
    model.register_forward_pre_hook(lambda layer, inputs: (calls.append("pre2"), inputs[0] + 1)[1])
    model.register_forward_post_hook(lambda layer, inputs, out: calls.append("post"))
    x = tensor([[1.0, 0.0, -1.0]])
    eager = model(x).numpy()
    assert calls == ["pre1", "pre2", "post"]
    to_static(model)
    np.testing.assert_allclose(model(x).numpy(), eager, rtol=1e-6)
    assert calls[3:] == ["pre1", "pre2", "post"]


def test_a_hook_must_be_callable():
    with pytest.raises(TypeError, match="callable"):
        Net().register_forward_pre_hook(3)
