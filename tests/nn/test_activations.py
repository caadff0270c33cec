"""Activation functions and layers against PyTorch (values and gradients, float64),
in a static program, and on the xla backend."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static

from nn_helpers import run_static

X = np.concatenate([np.linspace(-30, 30, 13), np.linspace(-4, 4, 17), [0.3, -0.7]])

# (d2s function, torch function, d2s layer class with the same options or None)
CASES = [
    ("silu", lambda F_, x: F.silu(x), lambda t, x: t.nn.functional.silu(x), nn.Silu()),
    ("swish", lambda F_, x: F.swish(x), lambda t, x: t.nn.functional.silu(x), nn.Swish()),
    ("hardswish", lambda F_, x: F.hardswish(x), lambda t, x: t.nn.functional.hardswish(x),
     nn.Hardswish()),
    ("hardsigmoid", lambda F_, x: F.hardsigmoid(x, slope=1 / 6),
     lambda t, x: t.nn.functional.hardsigmoid(x), nn.Hardsigmoid(1 / 6)),
    ("leaky_relu", lambda F_, x: F.leaky_relu(x, 0.2),
     lambda t, x: t.nn.functional.leaky_relu(x, 0.2), nn.LeakyReLU(0.2)),
    ("elu", lambda F_, x: F.elu(x, 0.7), lambda t, x: t.nn.functional.elu(x, 0.7), nn.ELU(0.7)),
    ("selu", lambda F_, x: F.selu(x), lambda t, x: t.nn.functional.selu(x), nn.SELU()),
    ("celu", lambda F_, x: F.celu(x, 1.5), lambda t, x: t.nn.functional.celu(x, 1.5),
     nn.CELU(1.5)),
    ("softplus", lambda F_, x: F.softplus(x, 2.0, 10.0),
     lambda t, x: t.nn.functional.softplus(x, 2.0, 10.0), nn.Softplus(2.0, 10.0)),
    ("softsign", lambda F_, x: F.softsign(x), lambda t, x: t.nn.functional.softsign(x),
     nn.Softsign()),
    ("mish", lambda F_, x: F.mish(x), lambda t, x: t.nn.functional.mish(x), nn.Mish()),
    ("relu6", lambda F_, x: F.relu6(x), lambda t, x: t.nn.functional.relu6(x), nn.ReLU6()),
    ("hardtanh", lambda F_, x: F.hardtanh(x, -2.0, 3.0),
     lambda t, x: t.nn.functional.hardtanh(x, -2.0, 3.0), nn.Hardtanh(-2.0, 3.0)),
    ("log_sigmoid", lambda F_, x: F.log_sigmoid(x), lambda t, x: t.nn.functional.logsigmoid(x),
     nn.LogSigmoid()),
    ("tanhshrink", lambda F_, x: F.tanhshrink(x), lambda t, x: t.nn.functional.tanhshrink(x),
     nn.Tanhshrink()),
    ("softshrink", lambda F_, x: F.softshrink(x, 0.6),
     lambda t, x: t.nn.functional.softshrink(x, 0.6), nn.Softshrink(0.6)),
    ("hardshrink", lambda F_, x: F.hardshrink(x, 0.6),
     lambda t, x: t.nn.functional.hardshrink(x, 0.6), nn.Hardshrink(0.6)),
    ("sigmoid", lambda F_, x: F.sigmoid(x), lambda t, x: t.sigmoid(x), nn.Sigmoid()),
    ("tanh", lambda F_, x: F.tanh(x), lambda t, x: t.tanh(x), nn.Tanh()),
    ("gelu_tanh", lambda F_, x: F.gelu(x, approximate=True),
     lambda t, x: t.nn.functional.gelu(x, approximate="tanh"), nn.GELU(approximate=True)),
    ("softmax", lambda F_, x: F.softmax(x), lambda t, x: t.softmax(x, -1), nn.Softmax()),
    ("log_softmax", lambda F_, x: F.log_softmax(x), lambda t, x: t.log_softmax(x, -1),
     nn.LogSoftmax()),
]


@pytest.mark.parametrize("name,fn,ref,layer", CASES, ids=[c[0] for c in CASES])
def test_activation_matches_torch_values_and_gradients(name, fn, ref, layer):
    torch = pytest.importorskip("torch")
    xt = torch.tensor(X, requires_grad=True)
    want = ref(torch, xt)
    weights = np.cos(np.arange(X.size))
    (want * torch.tensor(weights)).sum().backward()
    x = d2s.to_tensor(X, stop_gradient=False)
    got = fn(F, x)
    (got * d2s.to_tensor(weights)).sum().backward()
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-14)
    # (PyTorch's hardsigmoid gradient uses a float32 1/6)
    rtol = 1e-7 if name == "hardsigmoid" else 1e-10
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=1e-12)
    assert np.isfinite(x.grad.numpy()).all()
    np.testing.assert_allclose(layer(d2s.to_tensor(X)).numpy(), got.numpy(), rtol=1e-12)
    np.testing.assert_allclose(run_static(lambda v: fn(F, v), X), got.numpy(), rtol=1e-12)


@pytest.mark.parametrize("fmt,shape,n", [("NCHW", (2, 3, 2, 2), 3), ("NHWC", (2, 2, 2, 3), 3),
                                         ("NCHW", (2, 3, 4), 1)])
def test_prelu_matches_torch(fmt, shape, n):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(shape)
    w = np.linspace(0.1, 0.5, n)
    layer = nn.PReLU(n, 0.25, data_format=fmt)
    assert layer.weight.shape == (n,) and np.allclose(layer.weight.numpy(), 0.25)
    xt = torch.tensor(x if fmt == "NCHW" else x.transpose(0, 3, 1, 2), requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    want = torch.nn.functional.prelu(xt, wt)
    want.sum().backward()
    xd, wd = d2s.to_tensor(x, stop_gradient=False), d2s.to_tensor(w, stop_gradient=False)
    got = F.prelu(xd, wd, data_format=fmt)
    got.sum().backward()
    exp = want.detach().numpy()
    gx = xt.grad.numpy()
    if fmt == "NHWC":
        exp, gx = exp.transpose(0, 2, 3, 1), gx.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got.numpy(), exp, rtol=1e-12)
    np.testing.assert_allclose(xd.grad.numpy(), gx, rtol=1e-12)
    np.testing.assert_allclose(wd.grad.numpy(), wt.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="slopes"):
        F.prelu(d2s.to_tensor(np.zeros((2, 5, 2))), d2s.to_tensor(np.ones(3)))


def test_activations_on_the_xla_backend_equal_numpy(monkeypatch):
    pytest.importorskip("jax")
    monkeypatch.setenv("D2S_XLA_SYNC", "1")

    def f(x):
        return (F.mish(x) + F.elu(x) + F.softplus(x, 2.0) + F.hardswish(x)
                + F.leaky_relu(x) + F.selu(x) + F.log_sigmoid(x))
    x = X.astype(np.float32)
    want = to_static(f, backend="numpy")(d2s.to_tensor(x)).numpy()
    got = to_static(f, backend="xla")(d2s.to_tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f(d2s.to_tensor(x)).numpy(), want, rtol=1e-6, atol=1e-6)
