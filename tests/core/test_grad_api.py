"""`d2s.grad` (Paddle's `paddle.grad`): first and second derivatives of an
MLP vs finite differences (float64), `.grad` untouched, `grad_outputs`,
`allow_unused`, `no_grad_vars`, eager vs converted code (tensor `if`
included) on numpy and xla; and `Tensor.register_hook`."""
from __future__ import annotations

import numpy as np
import pytest

import d2s

rng = np.random.default_rng(3)
W1, B1 = rng.standard_normal((3, 5)) * 0.7, rng.standard_normal(5) * 0.1
W2 = rng.standard_normal((5, 1)) * 0.7
X0 = rng.standard_normal((2, 3))


def mlp(x):
    h = d2s.tanh(x @ d2s.to_tensor(W1) + d2s.to_tensor(B1))
    return d2s.sum(d2s.tanh(h @ d2s.to_tensor(W2)) ** 2)


def _fd(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[j] += eps
        lo[j] -= eps
        out[j] = (f(hi) - f(lo)) / (2 * eps)
    return out


def _first(xv):
    x = d2s.to_tensor(xv, stop_gradient=False)
    g, = d2s.grad(mlp(x), x)
    return g.numpy()


def test_first_derivative_matches_finite_differences_and_leaves_grad_alone():
    x = d2s.to_tensor(X0, stop_gradient=False)
    g, = d2s.grad(mlp(x), x)
    assert x.grad is None
    np.testing.assert_allclose(g.numpy(), _fd(lambda v: float(mlp(d2s.to_tensor(v))), X0),
                               rtol=1e-5, atol=1e-7)


def test_second_derivative_of_an_mlp_matches_finite_differences():
    r = rng.standard_normal(X0.shape)
    x = d2s.to_tensor(X0, stop_gradient=False)
    g, = d2s.grad(mlp(x), x, create_graph=True)
    assert not g.stop_gradient
    hvp, = d2s.grad((g * d2s.to_tensor(r)).sum(), x)
    want = _fd(lambda v: float(np.sum(_first(v) * r)), X0)
    np.testing.assert_allclose(hvp.numpy(), want, rtol=1e-4, atol=1e-6)


def test_grad_outputs_several_inputs_unused_and_no_grad_vars():
    a = d2s.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    b = d2s.to_tensor(np.array([3.0, -1.0]), stop_gradient=False)
    c = d2s.to_tensor(np.array([0.5]), stop_gradient=False)
    y = a * b
    ga, gb = d2s.grad(y, [a, b], grad_outputs=d2s.to_tensor(np.array([1.0, 10.0])))
    np.testing.assert_allclose(ga.numpy(), [3.0, -10.0])
    np.testing.assert_allclose(gb.numpy(), [1.0, 20.0])
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        d2s.grad(y.sum(), [a, c])
    assert d2s.grad(y.sum(), [a, c], allow_unused=True)[1] is None
    h = a * 2.0
    z = (h * b).sum()
    gb2, = d2s.grad(z, [b])
    np.testing.assert_allclose(gb2.numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="allow_unused"):
        d2s.grad(z, [a], no_grad_vars=[h])  # nothing flows through h


def tensor_if_grad(x):
    y = (x * x).sum()
    if y > 1.0:
        z = d2s.tanh(x * 3.0).sum()
    else:
        z = (x ** 3).sum()
    g, = d2s.grad(z, x)
    return g * 2.0


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("xv", [X0[0], X0[0] * 0.1], ids=["big", "small"])
def test_grad_in_converted_code_equals_eager(xv, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    want = tensor_if_grad(d2s.to_tensor(xv, stop_gradient=False)).numpy()
    got = d2s.jit.to_static(tensor_if_grad, backend=backend)(
        d2s.to_tensor(xv, stop_gradient=False)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_second_derivative_through_a_tensor_if_matches_finite_differences():
    def f(x):
        if (x * x).sum() > 1.0:
            return d2s.tanh(x * 3.0).sum()
        return (x ** 3).sum()
    xv = X0[0]

    def first(v):
        x = d2s.to_tensor(v, stop_gradient=False)
        return d2s.grad(f(x), x)[0].numpy()
    x = d2s.to_tensor(xv, stop_gradient=False)
    g, = d2s.grad(f(x), x, create_graph=True)
    hd, = d2s.grad(g.sum(), x)
    np.testing.assert_allclose(hd.numpy(), _fd(lambda v: float(first(v).sum()), xv),
                               rtol=1e-4, atol=1e-6)


def test_register_hook_on_leaf_and_non_leaf():
    torch = pytest.importorskip("torch")
    av = np.array([1.0, -2.0, 0.5])
    a = d2s.to_tensor(av, stop_gradient=False)
    h = a * a
    seen = []
    h.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 3.0)
    handle = a.register_hook(lambda g: g + 1.0)
    (h * 2.0).sum().backward()
    ta = torch.tensor(av, requires_grad=True)
    th = ta * ta
    th.register_hook(lambda g: g * 3.0)
    ta.register_hook(lambda g: g + 1.0)
    (th * 2.0).sum().backward()
    np.testing.assert_allclose(seen[0], [2.0, 2.0, 2.0])
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())
    handle.remove()
    a.clear_grad()
    (a * 1.0).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.ones(3))


def test_gradient_and_clear_gradient():
    a = d2s.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    assert a.gradient() is None
    (a * a).sum().backward()
    np.testing.assert_allclose(a.gradient(), [2.0, 4.0])
    a.clear_gradient()
    assert a.gradient() is None


def second_derivative(x):
    y = d2s.tanh(x * 3.0).sum()
    g, = d2s.grad(y, x, create_graph=True)
    h, = d2s.grad(g.sum(), x)
    return h


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_second_derivative_in_converted_code_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    xv = X0[0]
    want = second_derivative(d2s.to_tensor(xv, stop_gradient=False)).numpy()
    fd = _fd(lambda v: float(np.sum(3.0 / np.cosh(3.0 * v) ** 2)), xv)
    np.testing.assert_allclose(want, fd, rtol=1e-5, atol=1e-6)
    got = d2s.jit.to_static(second_derivative, backend=backend)(
        d2s.to_tensor(xv, stop_gradient=False)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10)


def second_derivative_through_if(x):
    if (x * x).sum() > 1.0:
        y = d2s.tanh(x * 3.0).sum()
    else:
        y = (x ** 3).sum()
    g, = d2s.grad(y, x, create_graph=True)
    h, = d2s.grad(g.sum(), x)
    return h


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_second_derivative_through_a_converted_tensor_if_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    want = second_derivative_through_if(d2s.to_tensor(X0[0], stop_gradient=False)).numpy()
    got = d2s.jit.to_static(second_derivative_through_if, backend=backend)(
        d2s.to_tensor(X0[0], stop_gradient=False)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10)
