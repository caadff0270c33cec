"""F.lp_pool1d / lp_pool2d and LPPool1D / LPPool2D: forward and backward
against PyTorch (same kernel/stride), padding and ceil_mode against a
loop-based numpy reference of the window sums, channels-last, inf-norm as
max pooling, and converted code (numpy, xla) equal to eager."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static

RNG = np.random.default_rng(11)


def _ref2d(x, p, k, s, pad, ceil):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    def size(L, k, s, pd):
        return -(-(L + 2 * pd - k) // s) + 1 if ceil else (L + 2 * pd - k) // s + 1
    oh, ow = size(h, k[0], s[0], pad[0]), size(w, k[1], s[1], pad[1])
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]]
            out[:, :, i, j] = (win ** p).sum((2, 3)) ** (1 / p)
    return out


@pytest.mark.parametrize("p,k,s,positive", [(2, 2, None, False), (3, (2, 3), (1, 2), True),
                                            (1.5, 3, 2, True)])
def test_2d_forward_backward_match_torch(p, k, s, positive):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 6, 7))
    x = np.abs(x) + 0.1 if positive else x
    xd, xt = d2s.to_tensor(x, stop_gradient=False), torch.tensor(x, requires_grad=True)
    yd = F.lp_pool2d(xd, p, k, s)
    yt = torch.nn.functional.lp_pool2d(xt, p, k, s)
    np.testing.assert_allclose(yd.numpy(), yt.detach().numpy(), rtol=1e-10)
    w = RNG.standard_normal(yt.shape)
    (yd * d2s.to_tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-12)
    layer = nn.LPPool2D(p, k, s)
    np.testing.assert_allclose(layer(d2s.to_tensor(x)).numpy(), yt.detach().numpy(),
                               rtol=1e-10)


def test_1d_matches_torch_and_layouts():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 9))
    xd, xt = d2s.to_tensor(x, stop_gradient=False), torch.tensor(x, requires_grad=True)
    yd, yt = F.lp_pool1d(xd, 2, 3, 2), torch.nn.functional.lp_pool1d(xt, 2, 3, 2)
    np.testing.assert_allclose(yd.numpy(), yt.detach().numpy(), rtol=1e-10)
    yd.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-12)
    nlc = nn.LPPool1D(2, 3, 2, data_format="NLC")(d2s.to_tensor(x.transpose(0, 2, 1)))
    np.testing.assert_allclose(nlc.numpy().transpose(0, 2, 1), yd.numpy(), rtol=1e-12)
    nhwc = F.lp_pool2d(d2s.to_tensor(x[:, :, None].transpose(0, 2, 3, 1)), 2, (1, 3), (1, 2),
                       data_format="NHWC")
    np.testing.assert_allclose(nhwc.numpy()[:, 0].transpose(0, 2, 1), yd.numpy(), rtol=1e-12)


@pytest.mark.parametrize("pad,ceil", [((1, 1), False), ((0, 0), True), ((1, 0), True)])
def test_padding_and_ceil_mode_are_window_sums(pad, ceil):
    x = np.abs(RNG.standard_normal((1, 2, 5, 6))) + 0.1
    got = F.lp_pool2d(d2s.to_tensor(x), 2, 3, 2, padding=list(pad), ceil_mode=ceil).numpy()
    np.testing.assert_allclose(got, _ref2d(x, 2, (3, 3), (2, 2), pad, ceil), rtol=1e-12)


def test_inf_norm_is_max_and_zero_windows_have_zero_gradient():
    x = RNG.standard_normal((1, 1, 4, 4))
    np.testing.assert_array_equal(F.lp_pool2d(d2s.to_tensor(x), float("inf"), 2).numpy(),
                                  F.max_pool2d(d2s.to_tensor(x), 2).numpy())
    z = d2s.to_tensor(np.zeros((1, 1, 2, 2)), stop_gradient=False)
    F.lp_pool2d(z, 2, 2).sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), np.zeros((1, 1, 2, 2)))
    with pytest.raises(ValueError, match="norm_type"):
        F.lp_pool2d(z, 0, 2)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    layers = [nn.LPPool2D(2, 2, ceil_mode=True), nn.LPPool1D(3, 2)]

    def fn(a, b):
        return layers[0](a), layers[1](b)
    args = [d2s.to_tensor(np.abs(RNG.standard_normal((2, 2, 5, 5)))),
            d2s.to_tensor(np.abs(RNG.standard_normal((2, 2, 6))))]
    for e, s in zip(fn(*args), to_static(fn, backend=backend)(*args)):
        np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-12)
