"""`y = d2s.zeros(...)` then `y[i] = ...` in converted code: the target is a
constant of the program (no input reaches it yet), which the xla backend
holds as a numpy array; its `set_item` rule used `x.at[...]` of a jax array
and failed with "'numpy.ndarray' object has no attribute 'at'". Values and
gradients match eager on numpy and xla."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def _fill_rows(x):
    y = d2s.zeros([3])
    for i in range(3):
        y[i] = x[i] * i
    return y


def _fill_then_slice(x):
    out = d2s.ones([2, 3])
    out[0] = x
    out[1, 1:] = x[:2] * 2
    return out


def _constant_at_tensor_index(x):
    y = d2s.full([3], 5.0)
    y[d2s.argmax(x)] = 0.0
    return y * x


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn", [_fill_rows, _fill_then_slice, _constant_at_tensor_index])
def test_item_assignment_into_a_constant(backend, fn):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(fn, backend=backend)
    for values in ([1.0, -2.0, 3.0], [-1.0, 4.0, 0.5]):
        xs, xe = (d2s.to_tensor(np.array(values, "float32"), stop_gradient=False)
                  for _ in range(2))
        out, ref = static(xs), fn(xe)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
        (out * out).sum().backward()
        (ref * ref).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-6)
