"""d2s.autograd.jacobian / hessian / backward (Paddle's functions): values
against torch.autograd.functional on the same functions (plain and batched),
Paddle's shapes and tuple nesting, the same numbers inside a converted
function on numpy and xla, and backward's accumulation."""
import numpy as np
import pytest

import d2s
from d2s.autograd import backward, hessian, jacobian
from d2s.jit import to_static

RNG = np.random.default_rng(2)
A = RNG.standard_normal((2, 3))
X = RNG.standard_normal(3)
XB = RNG.standard_normal((4, 3))


def f(x, lib):  # R^3 -> R^2 (per sample on the last axis)
    a = lib(A)
    return lib.tanh(x @ a.T) * x[..., :2] if lib is not np else np.tanh(x @ A.T) * x[..., :2]


def g(x):  # R^3 -> R
    return (x ** 3).sum(-1) + (x[..., 0] * x[..., 1]) ** 2


def _d2s(fn):
    class L:
        def __call__(self, v):
            return d2s.to_tensor(v)
        tanh = staticmethod(d2s.tanh)
    return lambda x: fn(x, L())


def _t(fn, torch):
    class L:
        def __call__(self, v):
            return torch.tensor(v)
        tanh = staticmethod(torch.tanh)
    return lambda x: fn(x, L())


def test_jacobian_and_hessian_match_torch():
    torch = pytest.importorskip("torch")
    x = d2s.to_tensor(X, stop_gradient=False)
    J = jacobian(_d2s(f)(x), x)
    want = torch.autograd.functional.jacobian(_t(f, torch), torch.tensor(X))
    assert J.shape == [2, 3]
    np.testing.assert_allclose(J[:].numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(J[1, :].numpy(), want.numpy()[1], rtol=1e-12)
    H = hessian(g(x), x)
    want_h = torch.autograd.functional.hessian(g, torch.tensor(X))
    np.testing.assert_allclose(H[:].numpy(), want_h.numpy(), rtol=1e-12)


def test_batched_jacobian_and_hessian_match_torch():
    torch = pytest.importorskip("torch")
    x = d2s.to_tensor(XB, stop_gradient=False)
    J = jacobian(_d2s(f)(x), x, batch_axis=0)
    assert J.shape == [4, 2, 3]
    H = hessian(g(x), x, batch_axis=0)
    assert H.shape == [4, 3, 3]
    for b in range(4):
        xt = torch.tensor(XB[b])
        np.testing.assert_allclose(
            J[b].numpy(), torch.autograd.functional.jacobian(_t(f, torch), xt).numpy(),
            rtol=1e-12)
        np.testing.assert_allclose(H[b].numpy(),
                                   torch.autograd.functional.hessian(g, xt).numpy(), rtol=1e-12)


def test_shapes_and_nesting():
    x = d2s.to_tensor(X, stop_gradient=False)
    s = d2s.to_tensor(np.array(0.5), stop_gradient=False)
    y = d2s.tanh(x * s)
    assert jacobian(y.sum(), x).shape == [3]          # 0-D y
    assert jacobian(y, s).shape == [3]                # 0-D x
    assert jacobian(y.sum(), s).shape == []
    nested = jacobian((y, y.sum()), (x, s))
    assert [[j.shape for j in row] for row in nested] == [[[3, 3], [3]], [[3], []]]
    np.testing.assert_allclose(nested[0][1][:].numpy(),
                               X * (1 - np.tanh(X * 0.5) ** 2), rtol=1e-12)
    blocks = hessian((x * x).sum() * s, (x, s))
    np.testing.assert_allclose(blocks[0][0][:].numpy(), np.eye(3) * 1.0, rtol=1e-12)
    np.testing.assert_allclose(blocks[0][1][:].numpy(), 2 * X, rtol=1e-12)
    unused = jacobian(d2s.tanh(s) * 1.0, x)
    np.testing.assert_array_equal(unused[:].numpy(), np.zeros(3))
    with pytest.raises(ValueError, match="1-D"):
        jacobian(d2s.reshape(y, [3, 1]), x)
    with pytest.raises(ValueError, match="0-D"):
        hessian(y, x)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_in_a_converted_function_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")

    def fn(x):
        return jacobian(_d2s(f)(x), x, batch_axis=0)[:], hessian(g(x), x, batch_axis=0)[:]
    x = d2s.to_tensor(XB, stop_gradient=False)
    eager = fn(x)
    conv = to_static(fn, backend=backend)(d2s.to_tensor(XB, stop_gradient=False))
    for a, c in zip(eager, conv):
        np.testing.assert_allclose(c.numpy(), a.numpy(), rtol=1e-10, atol=1e-12)


def test_backward_accumulates_every_tensor():
    x = d2s.to_tensor(X, stop_gradient=False)
    y = x * x
    backward([y.sum(), (3 * y).sum()])
    np.testing.assert_allclose(x.grad.numpy(), 8 * X, rtol=1e-12)
    x.clear_grad()
    backward([y], [d2s.to_tensor(np.array([1.0, 0.0, 2.0]))])
    np.testing.assert_allclose(x.grad.numpy(), 2 * X * [1, 0, 2], rtol=1e-12)
    with pytest.raises(ValueError, match="grad_tensors"):
        backward([y, y], [None])
