"""gammainc / gammaincc (d2s/core/ops/gammainc.py): against a long float
series of P (thousands of positive terms) on a grid crossing the
series/continued-fraction split, against torch.special (its own error is
~1e-10 there), gradient in y against its closed form, converted code on
numpy and xla."""
import math

import numpy as np
import pytest

import d2s
from d2s.jit import to_static

A, Y = (v.ravel() for v in np.meshgrid([0.5, 2.0, 10.0, 50.0],
                                       [0.0, 0.1, 1.0, 5.0, 20.0, 60.0, 120.0]))


def _p_reference(a, y):
    t = s = 1.0 / a
    for n in range(1, 4000):
        t *= y / (a + n)
        s += t
    return 0.0 if y == 0 else s * math.exp(a * math.log(y) - y - math.lgamma(a))


def test_values_and_gradient():
    want = np.array([_p_reference(a, y) for a, y in zip(A, Y)])
    yd = d2s.to_tensor(Y, stop_gradient=False)
    p = d2s.gammainc(d2s.to_tensor(A), yd)
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-12, atol=1e-15)
    q = d2s.to_tensor(A).gammaincc(d2s.to_tensor(Y))
    # Q directly (accurate where 1 - P cancels): P + Q = 1
    np.testing.assert_allclose(q.numpy() + p.numpy(), np.ones_like(want), rtol=0, atol=2e-15)
    # Q from the continued fraction, against the long series' 1 - P where that is
    # not cancellation noise
    use = (Y > A + 1) & (1 - want > 1e-6)
    assert use.sum() >= 4
    np.testing.assert_allclose(q.numpy()[use], 1 - want[use], rtol=1e-9)
    p.sum().backward()
    dens = np.array([0.0 if y == 0 else math.exp((a - 1) * math.log(y) - y - math.lgamma(a))
                     for a, y in zip(A, Y)])
    np.testing.assert_allclose(yd.grad.numpy(), dens, rtol=1e-8, atol=1e-14)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(
        p.numpy(), torch.special.gammainc(torch.tensor(A), torch.tensor(Y)).numpy(), atol=1e-9)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")

    def fn(a, y):
        return d2s.gammainc(a, y), d2s.gammaincc(a, y)
    args = [d2s.to_tensor(A[::3]), d2s.to_tensor(Y[::3])]
    for e, s in zip(fn(*args), to_static(fn, backend=backend)(*args)):
        np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-10, atol=1e-14)
    with pytest.raises(TypeError, match="float32 or float64"):
        d2s.gammainc(d2s.to_tensor(np.array([1])), d2s.to_tensor(np.array([1.0])))
