"""Issue 29's bugs: `sf.lowered_text(...)` of a whole training step on xla
(the StableHLO of the step), and `to_static(f, backend=...)` of an already
converted function honouring the new backend."""
import numpy as np
import pytest

pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s import nn  # noqa: E402


def _step_function():
    net = nn.Linear(3, 2)
    opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())

    def step(x):
        loss = (net(x) ** 2).sum()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    return net, step


@pytest.mark.parametrize("called_first", [False, True])
def test_lowered_text_of_a_training_step_on_xla(called_first):
    net, step = _step_function()
    sf = d2s.jit.to_static(step, backend="xla")
    x = d2s.to_tensor(np.ones((4, 3), "float32"))
    before = net.weight.numpy().copy()
    if called_first:
        sf(x)
        before = net.weight.numpy().copy()
    text = sf.lowered_text(x)
    assert "func.func public @main" in text
    assert "tensor<4x3xf32>" in text and "tensor<3x2xf32>" in text  # input, weight
    np.testing.assert_array_equal(net.weight.numpy(), before)  # showing it ran nothing
    numpy_text = d2s.jit.to_static(step, backend="numpy").lowered_text(x)
    assert "def " in numpy_text  # numpy's generated Python, for contrast


@pytest.mark.parametrize("how", ["method", "function", "layer_class"])
def test_converting_again_with_another_backend_honours_it(how):
    lin = nn.Linear(3, 2)
    x = d2s.to_tensor(np.random.default_rng(0).normal(size=(4, 3)).astype("float32"))
    if how == "method":
        first = d2s.jit.to_static(lin.forward)
    elif how == "function":
        first = d2s.jit.to_static(lambda t: lin(t) * 2.0)
    else:
        class Net(nn.Layer):
            def __init__(self):
                super().__init__()
                self.lin = lin

            @d2s.jit.to_static
            def forward(self, t):
                return self.lin(t) * 2.0
        net = Net()
        first = net.forward
    expect = first(x).numpy()
    if how == "layer_class":
        assert d2s.jit.to_static(net, backend="xla") is net
        second = net.forward
    else:
        second = d2s.jit.to_static(first, backend="xla")
    assert second.backend == "xla" and first.backend == "numpy"
    np.testing.assert_allclose(second(x).numpy(), expect, rtol=1e-5)
    runners = second.get_concrete_program(x)._runners
    assert "xla" in runners  # it ran on xla, not silently on numpy
    # the same programs: converting again built nothing new
    assert second.get_concrete_program(x) is first.get_concrete_program(x)
    # asking again for the same backend changes nothing
    assert d2s.jit.to_static(second, backend="xla") is second
