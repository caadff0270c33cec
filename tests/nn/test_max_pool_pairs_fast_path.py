"""The tiled 2-wide max-pool gradient (conv_nd._tiled_pairs_pool_grad): its
repeat-by-widening (`_pairs`) and its one-pass row tie-break, on every
element size it serves, window heights 1 to 4, and the values where bits and
equality part (-0.0, nan, inf), against a per-window reference."""
import numpy as np
import pytest

from d2s.core.ops import conv_nd as C

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_pairs_repeats_each_element_bit_for_bit(dtype):
    a = RNG.normal(size=(2, 3, 5)).astype(dtype)
    a[0, 0, :3] = [np.nan, -0.0, np.inf]
    got = C._pairs(a)
    want = np.repeat(a, 2, axis=-1)
    assert got.dtype == a.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    # a strided (non-contiguous) input takes np.repeat itself
    assert C._pairs(a[:, :, ::2]).tobytes() == np.repeat(a[:, :, ::2], 2, axis=-1).tobytes()


def _first_max_ref(g, x, kh):
    """Each window's cotangent to its first maximum in row-major order (none
    where the window's maximum is nan: no element equals it)."""
    n, c, oh, ow = g.shape
    out = np.zeros(x.shape, g.dtype)
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * kh:(i + 1) * kh, 2 * j:2 * j + 2].reshape(n, c, -1)
            best = np.max(win, axis=2)
            for a in range(n):
                for b in range(c):
                    hits = np.flatnonzero(win[a, b] == best[a, b])
                    if hits.size:
                        di, dj = divmod(int(hits[0]), 2)
                        out[a, b, i * kh + di, 2 * j + dj] = g[a, b, i, j]
    return out


@pytest.mark.parametrize("kh", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_tiled_pairs_gradient_goes_to_the_first_maximum(kh, dtype):
    x = RNG.integers(-1, 2, size=(2, 3, 3 * kh, 6)).astype(dtype)  # ties in most windows
    x[0, 0, 0, :2] = [-0.0, 0.0]                   # equal, different bits
    x[0, 1, :kh, 2:4] = -np.inf
    x[1, 0, 0, 0] = np.nan                         # a window whose maximum is nan
    attrs = dict(kernel=(kh, 2), stride=(kh, 2), padding=(0, 0, 0, 0), ceil_mode=False)
    with np.errstate(invalid="ignore"):
        best = C._max_pool_kernel(x, **attrs)
        g = RNG.normal(size=best.shape).astype(dtype)
        got = C._max_pool_grad_kernel(g, x, best, **attrs)
        want = _first_max_ref(g, x, kh)
    assert got.dtype == dtype and got.shape == x.shape
    np.testing.assert_array_equal(got, want)
