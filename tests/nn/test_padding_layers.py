"""ZeroPad1D/3D, ReflectionPad*, ReplicationPad*, CircularPad*: forward and
backward against PyTorch's twins (same padding), channels-last equal to the
transposed channels-first result, and converted code (numpy, xla) equal to
eager."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static

KINDS = [("Zero", "Zero"), ("Reflection", "Reflection"), ("Replication", "Replication"),
         ("Circular", "Circular")]
PADS = {1: [2, 1], 2: [1, 0, 2, 1], 3: [1, 1, 0, 2, 1, 0]}
CASES = [(k, n) for k, _ in KINDS for n in (1, 2, 3) if (k, n) != ("Zero", 2)]
RNG = np.random.default_rng(5)


def _x(n):
    return RNG.standard_normal((2, 2) + (3, 4, 4)[3 - n:]).astype(np.float64)


@pytest.mark.parametrize("kind,n", CASES)
def test_forward_and_backward_match_torch(kind, n):
    torch = pytest.importorskip("torch")
    x = _x(n)
    ours = getattr(nn, f"{kind}Pad{n}D")(PADS[n])
    theirs = getattr(torch.nn, f"{kind}Pad{n}d")(tuple(PADS[n]))
    xd = d2s.to_tensor(x, stop_gradient=False)
    xt = torch.tensor(x, requires_grad=True)
    yd, yt = ours(xd), theirs(xt)
    np.testing.assert_array_equal(yd.numpy(), yt.detach().numpy())
    w = RNG.standard_normal(yt.shape)
    (yd * d2s.to_tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("kind,n", [("Reflection", 2), ("Circular", 1), ("Replication", 3)])
def test_channels_last(kind, n):
    x = _x(n)
    perm = [0] + list(range(2, n + 2)) + [1]
    back = [0, n + 1] + list(range(1, n + 1))
    fmt = {1: "NLC", 2: "NHWC", 3: "NDHWC"}[n]
    first = getattr(nn, f"{kind}Pad{n}D")(PADS[n])(d2s.to_tensor(x)).numpy()
    last = getattr(nn, f"{kind}Pad{n}D")(PADS[n], data_format=fmt)(
        d2s.to_tensor(x.transpose(perm))).numpy()
    np.testing.assert_array_equal(last.transpose(back), first)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    layers = [nn.ReflectionPad2D(1), nn.CircularPad1D([1, 2]), nn.ZeroPad3D(1)]

    def fn(a, b, c):
        return layers[0](a), layers[1](b), layers[2](c)
    args = [d2s.to_tensor(_x(2)), d2s.to_tensor(_x(1)), d2s.to_tensor(_x(3))]
    for e, s in zip(fn(*args), to_static(fn, backend=backend)(*args)):
        np.testing.assert_array_equal(s.numpy(), e.numpy())
