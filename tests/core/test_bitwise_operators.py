"""`&`, `|`, `^`, `~`, `<<`, `>>` on tensors: bitwise on integers (a mask,
as numpy, Paddle and PyTorch give), logical on bools; eager and converted on
the numpy and xla backends, against numpy. Before, `x & 1` of an int tensor
was `logical_and` (a bool tensor): a silent wrong answer."""
from __future__ import annotations

import numpy as np
import pytest

import d2s

X = np.array([[5, -6, 7], [0, 12, -1]], dtype=np.int64)
Y = np.array([3, 10, -4], dtype=np.int32)


def _ops(x, y):
    return (x & 3, 1 | x, x ^ y, ~x, x << 2, x >> 1, (x > 0) & (y > 0), ~(x > 0),
            (x > 0) | True)


def _reference(x, y):
    return (x & 3, 1 | x, x ^ y, ~x, x << 2, x >> 1, (x > 0) & (y > 0), ~(x > 0),
            (x > 0) | True)


@pytest.mark.parametrize("mode", ["eager", "numpy", "xla"])
def test_operators_on_integers_and_bools(mode):
    if mode == "xla":
        pytest.importorskip("jax")
    fn = _ops if mode == "eager" else d2s.jit.to_static(_ops, backend=mode)
    got = fn(d2s.to_tensor(X), d2s.to_tensor(Y))
    for k, (g, w) in enumerate(zip(got, _reference(X, Y))):
        assert g.numpy().dtype == w.dtype, f"output {k}: {g.numpy().dtype} != {w.dtype}"
        np.testing.assert_array_equal(g.numpy(), w, err_msg=f"output {k}")


def test_logical_right_shift_and_float_errors():
    x = d2s.to_tensor(np.array([-8, 8], dtype=np.int32))
    got = d2s.bitwise_right_shift(x, 1, is_arithmetic=False).numpy()
    np.testing.assert_array_equal(got, (np.array([-8, 8], np.int32).view(np.uint32) >> 1)
                                  .view(np.int32))
    with pytest.raises(TypeError, match="integer or bool"):
        d2s.bitwise_and(d2s.to_tensor([1.5]), d2s.to_tensor([2.0]))
