"""A Python list of numbers read by a tensor loop's counter (`zip(row,
[1.0, 2.0, 3.0])` over a tensor, a constant table's row per trip): the list
is a constant of the program, a numpy array on the xla backend, which a
traced index broke ("TracerArrayConversionError"). Values and gradients
match eager on numpy and xla."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def _zip_with_weights(x):
    s = x[0] * 0
    for a, b, w in zip(x[0], x[1], [1.0, 2.0, 3.0]):
        s = s + a * b * w
    return s


def _enumerate_rows_with_scales(x):
    scales = [[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]]
    s = x[0] * 0
    for i, row in enumerate(x):
        s = s + row * d2s.to_tensor(scales)[i]
    return s


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn", [_zip_with_weights, _enumerate_rows_with_scales])
def test_python_lists_read_by_a_tensor_loop(backend, fn):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(fn, backend=backend)
    for values in ([[1.0, -2.0, 3.0], [0.5, 0.1, -1.0]], [[-1.0, 2.0, 0.0], [1.0, 2.0, 3.0]]):
        xs, xe = (d2s.to_tensor(np.array(values, "float32"), stop_gradient=False)
                  for _ in range(2))
        out, ref = static(xs), fn(xe)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
        (out * out).sum().backward()
        (ref * ref).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-6)
