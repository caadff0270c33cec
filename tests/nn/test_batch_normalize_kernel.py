"""batch_normalize's numpy kernel: the per-channel path (every axis but the
channels', float32/float64: row sums and squared deviations as dot
products) and the general one agree with float64 statistics of the same
input, for 1-D, 2-D and 3-D batch norm layouts and other axes."""
import numpy as np
import pytest

from d2s.core.ops.norm_ops import _batch_normalize_kernel

RNG = np.random.default_rng(2)


@pytest.mark.parametrize("shape,axes,dtype", [
    ((8, 4, 16), (0, 2), np.float32),             # BatchNorm1D over (N, C, L)
    ((6, 5, 7, 9), (0, 2, 3), np.float32),        # BatchNorm2D: the per-channel path
    ((3, 4, 2, 5, 6), (0, 2, 3, 4), np.float64),  # BatchNorm3D, float64
    ((6, 5, 7, 9), (0, 2, 3), np.float16),        # no BLAS products: the general path
    ((6, 5, 7), (0, 1), np.float32),              # channels last: the general path
    ((16, 3), (0,), np.float32),                  # (N, C): the general path
])
def test_statistics_and_normalized_values_match_float64(shape, axes, dtype):
    x = (RNG.normal(size=shape) * 3 + 2).astype(dtype)
    xhat, mu, var = _batch_normalize_kernel(x, axes, 1e-5)
    ref = x.astype(np.float64)
    mu64 = ref.mean(axis=axes, keepdims=True)
    var64 = ref.var(axis=axes, keepdims=True)
    tol = 2e-3 if dtype == np.float16 else (1e-12 if dtype == np.float64 else 1e-5)
    for got, want in ((mu, mu64), (var, var64)):
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert xhat.dtype == dtype and xhat.shape == x.shape
    np.testing.assert_allclose(xhat, (ref - mu64) / np.sqrt(var64 + 1e-5), rtol=tol * 10,
                               atol=tol * 10)


def test_an_empty_batch_keeps_the_general_path():
    x = np.zeros((0, 3, 4, 4), np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        xhat, mu, var = _batch_normalize_kernel(x, (0, 2, 3), 1e-5)
    assert xhat.shape == x.shape and mu.shape == (1, 3, 1, 1)
