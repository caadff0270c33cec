"""`d2s.autograd.PyLayer` (Paddle's custom-gradient functions): eager
backward and `d2s.grad` use the user's `backward` (checked with a gradient
deliberately different from forward's own), several inputs and outputs,
saved tensors, and the clear error inside a converted function that needs
gradients."""
import numpy as np
import pytest

import d2s
from d2s.autograd import PyLayer
from d2s.jit import to_static


class CusTanh(PyLayer):
    @staticmethod
    def forward(ctx, x):
        y = d2s.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensor()
        return dy * (1 - d2s.square(y))


class ScaledGrad(PyLayer):
    """Identity forward; backward multiplies by `k` (not forward's derivative)."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x

    @staticmethod
    def backward(ctx, dy):
        return dy * ctx.k


class Split(PyLayer):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b, a + b

    @staticmethod
    def backward(ctx, d_prod, d_sum):
        a, b = ctx.saved_tensor()
        return d_prod * b + d_sum, d_prod * a + d_sum


def _t(a, grad=True):
    return d2s.to_tensor(np.asarray(a, np.float64), stop_gradient=not grad)


def test_custom_tanh_matches_the_builtin_gradient():
    x0 = np.linspace(-2, 2, 7)
    x = _t(x0)
    y = CusTanh.apply(x)
    assert not y.stop_gradient
    (y * _t(np.arange(7.0), False)).sum().backward()
    np.testing.assert_allclose(y.numpy(), np.tanh(x0))
    np.testing.assert_allclose(x.grad.numpy(), np.arange(7.0) * (1 - np.tanh(x0) ** 2),
                               rtol=1e-12)


def test_the_user_backward_is_what_runs():
    x = _t([1.0, 2.0, 3.0])
    out = ScaledGrad.apply(x * 2.0, 5.0)  # the tape continues through x * 2
    (out * out).sum().backward()
    # d/dx = 2 * out * 5 * 2 (the hand-written 5 replaces forward's 1)
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([2.0, 4.0, 6.0]) * 5 * 2)
    x2 = _t([1.0, -1.0])
    (g,) = d2s.grad([ScaledGrad.apply(x2, 3.0).sum()], [x2])
    np.testing.assert_allclose(g.numpy(), [3.0, 3.0])
    assert x2.grad is None


def test_several_inputs_and_outputs_and_an_unused_output():
    a, b = _t([1.0, 2.0]), _t([3.0, 4.0])
    prod, total = Split.apply(a, b)
    (prod * 2.0).sum().backward()  # `total` unused: its gradient materializes as zeros
    np.testing.assert_allclose(a.grad.numpy(), [6.0, 8.0])
    np.testing.assert_allclose(b.grad.numpy(), [2.0, 4.0])


def test_no_gradient_wanted_records_nothing():
    y = CusTanh.apply(_t([0.5], grad=False))
    assert y.stop_gradient
    with d2s.no_grad():
        assert CusTanh.apply(_t([0.5])).stop_gradient


def test_backward_returning_the_wrong_count_is_a_clear_error():
    class Bad(PyLayer):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, dy):
            return dy

    a, b = _t([1.0]), _t([2.0])
    with pytest.raises(ValueError, match="1 gradient.*2 Tensor input"):
        Bad.apply(a, b).sum().backward()


def test_converted_function_refuses_gradients_but_runs_inference():
    w = _t([0.5, -0.5])

    @to_static
    def f(x):
        return CusTanh.apply(x * w)
    with pytest.raises(NotImplementedError, match="CusTanh.apply inside a converted"):
        f(_t([1.0, 2.0], grad=False))
    w.stop_gradient = True
    np.testing.assert_allclose(f(_t([1.0, 2.0], grad=False)).numpy(), np.tanh([0.5, -1.0]))
