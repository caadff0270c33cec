"""Eager autograd: accumulation, stop_gradient, detach, no_grad, broadcast reduction."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import d2s
from d2s.core import grad_enabled, state


def leaf(a):
    return d2s.to_tensor(np.asarray(a, dtype=np.float64), stop_gradient=False)


def test_gradients_accumulate_across_backward_calls():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0, 9.0])
    x.clear_grad()
    assert x.grad is None
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0, 3.0])


def test_backward_twice_on_the_same_graph_accumulates():
    x = leaf([1.0, -2.0])
    y = (x * x * x).sum()
    y.backward()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 3 * np.array([1.0, 4.0]))


def test_backward_with_explicit_output_gradient():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x * 2.0
    y.backward(np.array([[1.0, 0.0], [0.5, 2.0]]))
    np.testing.assert_allclose(x.grad.numpy(), [[2.0, 0.0], [1.0, 4.0]])


def test_shared_subexpression_gradients_add_up():
    x = leaf([0.5, 1.5])
    h = x.exp()
    y = (h * h + h).sum()  # d/dx = 2 e^{2x} + e^x
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * x.numpy()) + np.exp(x.numpy()))


def test_stop_gradient_blocks_paths():
    x = leaf([1.0, 2.0])
    c = d2s.to_tensor(np.array([3.0, 4.0]))  # stop_gradient=True by default
    assert c.stop_gradient and c.grad is None
    (x * c).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])
    assert c.grad is None
    # a tensor whose flag is set True after creation stops its own gradient
    y = leaf([1.0, 1.0])
    z = leaf([2.0, 2.0])
    z.stop_gradient = True
    (y * z).sum().backward()
    assert z.grad is None
    np.testing.assert_allclose(y.grad.numpy(), [2.0, 2.0])


def test_no_inputs_requiring_grad_gives_constant_results():
    a = d2s.to_tensor(np.array([1.0, 2.0]))
    out = (a * 2).sum()
    assert out.stop_gradient
    with pytest.raises(RuntimeError, match="does not require grad"):
        out.backward()


def test_detach_cuts_the_graph():
    x = leaf([1.0, 2.0])
    d = (x * x).detach()
    assert d.stop_gradient and d.is_leaf
    np.testing.assert_array_equal(d.numpy(), [1.0, 4.0])
    (x * d).sum().backward()  # d is a constant: the gradient is d itself
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 4.0])


def test_no_grad_context_records_no_tape():
    x = leaf([1.0, 2.0])
    with d2s.no_grad():
        assert not grad_enabled()
        y = x * 2
        z = d2s.exp(y)
    assert grad_enabled()
    assert y.stop_gradient and z.stop_gradient and y.is_leaf and z.is_leaf
    w = x * 2
    assert not w.stop_gradient and not w.is_leaf


def test_no_grad_decorator():
    @d2s.no_grad()
    def f(x):
        assert not grad_enabled()
        return x * x

    x = leaf([3.0])
    y = f(x)
    assert y.stop_gradient and y.is_leaf and grad_enabled()
    assert f.__name__ == "f"


def test_no_grad_restores_state_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with d2s.no_grad():
            1 / 0
    assert grad_enabled()


def test_no_grad_decorator_is_reentrant():
    @d2s.no_grad()
    def f(n):
        return f(n - 1) if n else 0

    try:
        f(2)
        assert grad_enabled()
    finally:
        state._tls.grad_enabled = True  # do not leak the bug into later tests


def test_grad_mode_is_per_thread():
    seen = []

    def worker():
        seen.append(grad_enabled())

    with d2s.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen == [True]


@pytest.mark.parametrize("xs,ys", [((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)),
                                   ((3, 4), ()), ((1,), (2, 3))])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "where"])
def test_broadcast_operand_gradients_reduce_to_operand_shape(xs, ys, op):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 1.5, size=xs)
    b = rng.uniform(0.5, 1.5, size=ys)
    x, y = leaf(a), leaf(b)
    out = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
           "div": lambda: x / y,
           "where": lambda: d2s.where(d2s.to_tensor(np.broadcast_to(a, np.broadcast_shapes(
               xs, ys)) > 1.0), x, y)}[op]()
    r = rng.standard_normal(out.shape)
    (out * d2s.to_tensor(r)).sum().backward()
    full = np.broadcast_shapes(xs, ys)
    ga, gb = {"add": (r, r), "sub": (r, -r), "mul": (r * b, r * a),
              "div": (r / b, -r * a / b ** 2),
              "where": (np.where(np.broadcast_to(a, full) > 1.0, r, 0),
                        np.where(np.broadcast_to(a, full) > 1.0, 0, r))}[op]
    ga, gb = np.broadcast_to(ga, full), np.broadcast_to(gb, full)

    def reduce_to(g, shape):
        g = g.sum(tuple(range(g.ndim - len(shape))))
        return g.sum(tuple(i for i, d in enumerate(shape) if d == 1), keepdims=True)
    assert x.grad.shape == xs and y.grad.shape == ys
    np.testing.assert_allclose(x.grad.numpy(), reduce_to(ga, xs), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), reduce_to(gb, ys), rtol=1e-12)


def test_max_min_ties_share_the_gradient():
    x = leaf([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    x.max(axis=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    y = leaf([4.0, 1.0, 1.0])
    y.min().backward()
    np.testing.assert_allclose(y.grad.numpy(), [0, 0.5, 0.5])


def test_integer_leaf_does_not_break_float_gradients():
    x = leaf([1.0, 2.0, 3.0])
    idx = d2s.to_tensor(np.array([2, 0]))
    (d2s.gather(x, idx) * 2.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.0, 2.0])
    assert idx.grad is None


def test_float32_leaf_gets_float32_gradient():
    x = d2s.to_tensor(np.array([1.0, 2.0], np.float32), stop_gradient=False)
    (x * d2s.to_tensor(np.array([0.5, 0.25]))).sum().backward()  # float64 partner
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.25])
