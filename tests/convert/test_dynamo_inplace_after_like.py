"""`y.add_(d2s.ones_like(y))`: an in-place update of the tensor a `*_like`
op read. `full_like`'s gradient reads nothing of its input, so the eager
backward must not refuse it ("modified by an inplace operation", as PyTorch
refuses only ops that saved the tensor); eager and converted code (numpy,
xla) then give the same values and gradients."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def _ones_like_then_add_(x):
    y = x * 1.5
    y.add_(d2s.ones_like(y))
    return y


def _zeros_like_kept(x):
    y = x * 2.0
    base = d2s.zeros_like(y)
    y.multiply_(d2s.full_like(y, 3.0))
    return y + base


def _full_like_in_a_branch(x):
    y = x * 1.0
    if x.sum() > 0:
        y.add_(d2s.full_like(y, 3.0))
    return y * x


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn", [_ones_like_then_add_, _zeros_like_kept, _full_like_in_a_branch])
def test_inplace_update_after_a_like_op(backend, fn):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(fn, backend=backend)
    for values in ([1.0, -2.0, 3.0], [-1.0, -0.5, -3.0]):
        xs, xe = (d2s.to_tensor(np.array(values, "float32"), stop_gradient=False)
                  for _ in range(2))
        out, ref = static(xs), fn(xe)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
        (out * out).sum().backward()
        (ref * ref).sum().backward()     # eagerly: was the in-place RuntimeError
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-6)
