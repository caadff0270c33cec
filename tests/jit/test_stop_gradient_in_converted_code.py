"""`x.stop_gradient = ...` inside converted code is honoured (issue 25 item
4): gradients flow (or stop) as in the eager run, on the numpy and xla
backends. `False` on an input makes the caller's tensor require a gradient
(it gets `.grad`), on every call; `True` on an intermediate stops the
gradients through the later uses of that name, in a tensor `if` too."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import tensor


def _input_gradient(x, w):
    x.stop_gradient = False
    return (d2s.tanh(x * w)).sum()


def _stopped(x, w):
    h = x * w
    h.stop_gradient = True
    return (h * w).sum() + (x * w).sum()


def _stopped_in_a_branch(x, w):
    h = x * w
    if x.sum() > 0:
        h.stop_gradient = True
    return (h * w * w).sum()


CASES = [(_input_gradient, [1.0, -0.25]), (_stopped, [1.0, 2.0]),
         (_stopped_in_a_branch, [1.0, 2.0]), (_stopped_in_a_branch, [-1.0, -2.0])]


def _run(fn, values):
    x = tensor(values)                       # stop_gradient=True, as data is
    w = tensor([0.5, 3.0], grad=True)
    loss = fn(x, w)
    loss.backward()
    return (loss.numpy(), x.stop_gradient, None if x.grad is None else x.grad.numpy(),
            w.grad.numpy())


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn,values", CASES)
def test_stop_gradient_writes_as_eagerly(backend, fn, values):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(fn, backend=backend)
    eager = _run(fn, values)
    for _ in range(2):  # the first call builds; the second takes the cached program
        got = _run(static, values)
        np.testing.assert_allclose(got[0], eager[0], rtol=1e-6)
        assert got[1] == eager[1]
        if eager[2] is None:
            assert got[2] is None
        else:
            np.testing.assert_allclose(got[2], eager[2], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got[3], eager[3], rtol=1e-5)


class _Saliency(nn.Layer):
    """The usual reason: the gradient of the output w.r.t. the input."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        x.stop_gradient = False
        return self.fc(x).sum(), x


def test_an_input_made_differentiable_in_a_converted_forward():
    d2s.seed(2)
    model = _Saliency()
    x = tensor([[1.0, 2.0, 3.0]])
    eager_loss, _ = model(x)
    eager_loss.backward()
    want = x.grad.numpy().copy()
    to_static(model)
    x2 = tensor([[1.0, 2.0, 3.0]])
    loss, _ = model(x2)
    loss.backward()
    assert not x2.stop_gradient
    np.testing.assert_allclose(x2.grad.numpy(), want, rtol=1e-6)


class _Holder:
    pass


def _on_an_attribute(x, box):
    box.h = x * 2
    box.h.stop_gradient = True
    return box.h.sum()


def test_stop_gradient_on_an_attribute_says_what_to_write():
    with pytest.raises(ControlFlowError, match=r"\.detach\(\)"):
        to_static(_on_an_attribute)(tensor([1.0], grad=True), _Holder())


SHARED = d2s.to_tensor(np.array([2.0, 1.0], "float32"))


def _marks_a_global(x):
    SHARED.stop_gradient = False   # an eager tensor the function does not bind
    return (x * SHARED).sum()


def test_a_global_tensor_keeps_the_plain_attribute_write():
    SHARED.stop_gradient = True
    x = tensor([1.0, 3.0], grad=True)
    loss = to_static(_marks_a_global)(x)
    assert not SHARED.stop_gradient
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 1.0])
