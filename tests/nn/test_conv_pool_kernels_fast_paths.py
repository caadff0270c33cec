"""The numpy conv / pool kernels' fast paths (tiled 2-wide max-pool windows,
the flat padded-row convolution products) against plain per-window numpy
references, on inputs full of ties and on the shapes that take the general
paths, so a fast path can never change an answer."""
import numpy as np
import pytest

from d2s.core.ops import conv_nd as C

RNG = np.random.default_rng(11)


def _pool_grad_ref(g, x, kernel, stride):
    """Each window's cotangent to its first maximum in row-major order."""
    n, c, oh, ow = g.shape
    kh, kw = kernel
    out = np.zeros(x.shape, g.dtype)
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw]
            first = win.reshape(n, c, -1).argmax(axis=2)
            di, dj = np.divmod(first, kw)
            for a in range(n):
                for b in range(c):
                    out[a, b, i * stride[0] + di[a, b], j * stride[1] + dj[a, b]] += g[a, b, i, j]
    return out


@pytest.mark.parametrize("shape,kernel,dtype", [
    ((3, 4, 8, 10), (2, 2), np.float32),     # the fast path
    ((2, 3, 9, 6), (3, 2), np.float64),      # taller windows, still 2 wide
    ((2, 3, 6, 9), (2, 3), np.float32),      # 3 wide: the general path
    ((2, 2, 7, 7), (2, 2), np.float32),      # odd sizes: windows do not tile
])
def test_max_pool_grad_goes_to_the_first_maximum_with_ties(shape, kernel, dtype):
    # small integers: most windows hold the maximum two or more times
    x = RNG.integers(0, 3, size=shape).astype(dtype)
    attrs = dict(kernel=kernel, stride=kernel, padding=(0, 0, 0, 0), ceil_mode=False)
    best = C._max_pool_kernel(x, **attrs)
    g = RNG.normal(size=best.shape).astype(dtype)
    got = C._max_pool_grad_kernel(g, x, best, **attrs)
    assert got.dtype == dtype and got.shape == x.shape
    np.testing.assert_array_equal(got, _pool_grad_ref(g, x, kernel, kernel))


def _conv_grad_input_ref(g, w, x_shape, stride, padding, dilation, groups):
    """The adjoint of the convolution, one window at a time."""
    n, o, oh, ow = g.shape
    cg, kh, kw = w.shape[1:]
    t, b, l, r = padding
    gx = np.zeros((n, x_shape[1], x_shape[2] + t + b, x_shape[3] + l + r), np.float64)
    og = o // groups
    for p in range(oh):
        for q in range(ow):
            for gi in range(groups):
                wg = w[gi * og:(gi + 1) * og].astype(np.float64)       # (og, cg, kh, kw)
                contrib = np.einsum("no,ocij->ncij", g[:, gi * og:(gi + 1) * og, p, q], wg)
                rows = slice(p * stride[0], p * stride[0] + dilation[0] * (kh - 1) + 1,
                             dilation[0])
                cols = slice(q * stride[1], q * stride[1] + dilation[1] * (kw - 1) + 1,
                             dilation[1])
                gx[:, gi * cg:(gi + 1) * cg, rows, cols] += contrib
    return gx[:, :, t:t + x_shape[2], l:l + x_shape[3]]


@pytest.mark.parametrize("x_shape,w_shape,stride,padding,dilation,groups", [
    ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),   # flat rows
    ((2, 4, 8, 9), (6, 2, 3, 2), (1, 1), (2, 0, 1, 3), (2, 1), 2),   # flat rows, groups
    ((1, 2, 5, 5), (3, 2, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),   # 1x1
    ((2, 3, 9, 8), (4, 3, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),   # strided: general
])
def test_conv2d_grad_input_matches_the_windowed_adjoint(x_shape, w_shape, stride, padding,
                                                         dilation, groups):
    w = RNG.normal(size=w_shape).astype(np.float32)
    x = np.zeros(x_shape, np.float32)
    oh, ow = C.out_shape(x_shape[2:], w_shape[2:], stride, padding, dilation)
    g = RNG.normal(size=(x_shape[0], w_shape[0], oh, ow)).astype(np.float32)
    got = C._grad_input_kernel(g, w, stride=stride, padding=padding, dilation=dilation,
                                groups=groups, input_hw=x_shape[2:])
    assert got.dtype == np.float32 and got.shape == x_shape
    want = _conv_grad_input_ref(g, w, x_shape, stride, padding, dilation, groups)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv2d_grad_input_with_non_finite_weights_keeps_the_general_answer():
    # the flat path's zero columns would meet the inf (0 * inf = nan); the
    # kernel takes the general path there, so only the real windows see it
    w = np.ones((1, 1, 3, 3), np.float32)
    w[0, 0, 0, 0] = np.inf
    g = np.ones((1, 1, 4, 4), np.float32)
    got = C._grad_input_kernel(g, w, stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1),
                                groups=1, input_hw=(4, 4))
    want = _conv_grad_input_ref(g, w, (1, 1, 4, 4), (1, 1), (1, 1, 1, 1), (1, 1), 1)
    np.testing.assert_array_equal(got, want.astype(np.float32))


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", [
    ((2, 2), (2, 2), 0, False),
    ((3, 3), (2, 2), 1, True),      # overlapping windows, padding, ceil mode's extra row
])
def test_max_pool_gradient_on_xla_picks_the_same_first_maximum(kernel, stride, padding,
                                                               ceil_mode):
    pytest.importorskip("jax")
    import d2s
    import d2s.nn.functional as F
    from d2s.jit import to_static

    x_np = RNG.integers(0, 3, size=(2, 3, 7, 8)).astype(np.float32)  # ties everywhere
    oh, ow = C.out_shape(x_np.shape[2:], kernel, stride, (padding,) * 4, None, ceil_mode)
    r = d2s.to_tensor(RNG.normal(size=(2, 3, oh, ow)).astype(np.float32))

    def grad_of_pool(x, r):
        y = F.max_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode)
        (gx,) = d2s.grad([(y * r).sum()], [x])
        return gx

    want = grad_of_pool(d2s.to_tensor(x_np, stop_gradient=False), r).numpy()
    got = to_static(grad_of_pool, backend="xla")(d2s.to_tensor(x_np, stop_gradient=False), r)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)
    if kernel == stride:  # one element per window takes its cotangent
        assert np.count_nonzero(want) == r.numpy().size


@pytest.mark.parametrize("x_shape,w_shape,stride,padding,dilation,groups", [
    ((2, 16, 6, 7), (5, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # one product
    ((2, 8, 9, 8), (3, 8, 3, 3), (2, 1), (0, 2, 1, 0), (1, 2), 1),    # one product, strided
    ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),    # short patch
    ((2, 16, 6, 6), (4, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),   # groups
])
def test_conv2d_grad_filter_matches_the_windowed_sum(x_shape, w_shape, stride, padding,
                                                     dilation, groups):
    x = RNG.normal(size=x_shape).astype(np.float32)
    oh, ow = C.out_shape(x_shape[2:], w_shape[2:], stride, padding, dilation)
    g = RNG.normal(size=(x_shape[0], w_shape[0], oh, ow)).astype(np.float32)
    got = C._grad_filter_kernel(x, g, stride=stride, padding=padding, dilation=dilation,
                                 groups=groups, kernel_hw=w_shape[2:])
    assert got.dtype == np.float32 and got.shape == w_shape
    t, b, l, r = padding
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (t, b), (l, r)))
    cg, og = w_shape[1], w_shape[0] // groups
    want = np.zeros(w_shape)
    for i in range(w_shape[2]):
        for j in range(w_shape[3]):
            di, dj = i * dilation[0], j * dilation[1]
            win = xp[:, :, di:di + stride[0] * (oh - 1) + 1:stride[0],
                     dj:dj + stride[1] * (ow - 1) + 1:stride[1]]
            for gi in range(groups):
                want[gi * og:(gi + 1) * og, :, i, j] = np.einsum(
                    "nopq,ncpq->oc", g[:, gi * og:(gi + 1) * og], win[:, gi * cg:(gi + 1) * cg])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
