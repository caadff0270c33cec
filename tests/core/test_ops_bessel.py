"""i0 / i0e / i1 / i1e (d2s/core/ops/bessel.py): values and gradients against
torch.special on both sides of the series/asymptotic split and at 0; numpy
(np.i0) through the shared ops_check (finite differences, numpy+xla static,
unknown dims, ONNX Runtime); methods; integer input refused."""
import numpy as np
import pytest

import d2s
from ops_check import check

X = np.array([0.0, 1e-3, -0.7, 2.5, -9.0, 29.5, 30.5, -45.0, 120.0, 600.0])


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e"])
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    xs = X if name.endswith("e") else X[X < 700]
    xd = d2s.to_tensor(xs, stop_gradient=False)
    xt = torch.tensor(xs, requires_grad=True)
    yd, yt = getattr(d2s, name)(xd), getattr(torch.special, name)(xt)
    np.testing.assert_allclose(yd.numpy(), yt.detach().numpy(), rtol=1e-13, atol=1e-300)
    if name in ("i0", "i1"):  # the scaled ones have a kink at 0 (their torch grads differ there)
        yd.sum().backward()
        yt.sum().backward()
        np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-14)
    assert np.array_equal(getattr(d2s.to_tensor(xs), name)().numpy(), yd.numpy())


def test_static_xla_onnx():
    x = np.array([0.3, -2.0, 12.0, 31.0, -40.0])
    # gradients: against torch above (np.i0's finite differences are not smooth enough)
    check(lambda t: d2s.i0(t), [x], np.i0, rtol=1e-12, grad=False)
    check(lambda t: d2s.i0e(t.astype("float32")), [x.astype(np.float32)],
          lambda t: (np.i0(t.astype(np.float64)) * np.exp(-np.abs(t))).astype(np.float32),
          rtol=1e-5, unknown_dims=False)
    with pytest.raises(TypeError, match="float32 or float64"):
        d2s.i1(d2s.to_tensor(np.array([1, 2])))
