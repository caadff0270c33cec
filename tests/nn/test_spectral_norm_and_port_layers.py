"""nn.utils.spectral_norm and nn.SpectralNorm against PyTorch's spectral_norm
(outputs, the weight's gradient, the power-iteration buffers after several
training steps, eval mode), eagerly and converted by to_static on numpy and
xla (the buffers updated after each run as eagerly); nn.Unflatten,
nn.BatchNorm3D (vs torch, PaddlePaddle's momentum and biased running
variance), nn.ParameterDict."""
import numpy as np
import pytest

import d2s
from d2s import nn

torch = pytest.importorskip("torch")
R = np.random.default_rng(2)


def _pair():
    tconv = torch.nn.Conv2d(2, 3, 2).double()
    tconv = torch.nn.utils.spectral_norm(tconv, n_power_iterations=2)
    conv = nn.Conv2D(2, 3, 2)
    conv.to(dtype="float64")
    conv.weight.set_value(tconv.weight_orig.detach().numpy())
    conv.bias.set_value(tconv.bias.detach().numpy())
    conv = nn.utils.spectral_norm(conv, n_power_iterations=2)
    conv.weight_u.set_value(tconv.weight_u.numpy())
    conv.weight_v.set_value(tconv.weight_v.numpy())
    return conv, tconv


@pytest.mark.parametrize("backend", [None, "numpy", "xla"])
def test_spectral_norm_trains_like_torch(backend):
    conv, tconv = _pair()
    call = conv if backend is None else d2s.jit.to_static(lambda x: conv(x), backend=backend)
    for step in range(3):
        x = R.standard_normal((1, 2, 3, 3))
        want = tconv(torch.tensor(x))
        got = call(d2s.to_tensor(x))
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10,
                                   err_msg=f"step {step}")
        np.testing.assert_allclose(conv.weight_u.numpy(), tconv.weight_u.numpy(), rtol=1e-10)
        np.testing.assert_allclose(conv.weight_v.numpy(), tconv.weight_v.numpy(), rtol=1e-10)
    if backend is None:  # the gradient reaches weight_orig through sigma
        want.sum().backward()
        got.sum().backward()
        np.testing.assert_allclose(conv.weight_orig.grad.numpy(),
                                   tconv.weight_orig.grad.numpy(), rtol=1e-9)
    conv.eval()
    tconv.eval()
    u = conv.weight_u.numpy().copy()
    x = R.standard_normal((1, 2, 3, 3))
    np.testing.assert_allclose(call(d2s.to_tensor(x)).numpy(),
                               tconv(torch.tensor(x)).detach().numpy(), rtol=1e-10)
    np.testing.assert_array_equal(conv.weight_u.numpy(), u)  # eval: no iteration
    assert "weight_u" in conv.state_dict() and "weight_orig" in conv.state_dict()


def test_spectral_norm_layer_matches_the_utility():
    w = R.standard_normal((3, 2, 2))
    layer = nn.SpectralNorm([3, 2, 2], dim=1, power_iters=3, dtype="float64")
    mat = np.moveaxis(w, 1, 0).reshape(2, -1)
    u, v = layer.weight_u.numpy(), layer.weight_v.numpy()
    for _ in range(3):
        v = mat.T @ u
        v /= np.linalg.norm(v)
        u = mat @ v
        u /= np.linalg.norm(u)
    got = layer(d2s.to_tensor(w))
    np.testing.assert_allclose(got.numpy(), w / (u @ mat @ v), rtol=1e-10)
    np.testing.assert_allclose(layer.weight_u.numpy(), u, rtol=1e-10)
    assert abs(u @ mat @ v - np.linalg.svd(mat, compute_uv=False)[0]) < 0.2
    with pytest.raises(ValueError, match="SpectralNorm: weight of shape"):
        layer(d2s.to_tensor(R.standard_normal((2, 2, 2))))


def test_unflatten_batchnorm3d_parameterdict():
    x = R.standard_normal((2, 6, 3)).astype(np.float32)
    np.testing.assert_array_equal(nn.Unflatten(1, [2, -1])(d2s.to_tensor(x)).numpy(),
                                  x.reshape(2, 2, 3, 3))
    sf = d2s.jit.to_static(lambda t: nn.Unflatten(-1, (3, 1))(t))
    np.testing.assert_array_equal(sf(d2s.to_tensor(x)).numpy(), x.reshape(2, 6, 3, 1))

    v = R.standard_normal((2, 3, 2, 2, 2)).astype(np.float32)
    bn, tbn = nn.BatchNorm3D(3), torch.nn.BatchNorm3d(3, momentum=0.1)
    np.testing.assert_allclose(bn(d2s.to_tensor(v)).numpy(),
                               tbn(torch.tensor(v)).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn._mean.numpy(), tbn.running_mean.numpy(), rtol=1e-5)
    np.testing.assert_allclose(bn._variance.numpy(), 0.9 + 0.1 * v.var(axis=(0, 2, 3, 4)),
                               rtol=1e-5)
    bn.eval()
    tbn.running_var.copy_(torch.tensor(bn._variance.numpy()))
    tbn.eval()
    np.testing.assert_allclose(bn(d2s.to_tensor(v)).numpy(),
                               tbn(torch.tensor(v)).detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="rank"):
        bn(d2s.to_tensor(v[0]))

    pd = nn.ParameterDict({"a": d2s.create_parameter([2], "float32")})
    pd["b"] = d2s.create_parameter([3], "float32")
    assert list(pd) == ["a", "b"] and len(pd) == 2 and "b" in pd
    assert [tuple(p.shape) for p in pd.parameters()] == [(2,), (3,)]
    assert set(pd.state_dict()) == {"a", "b"}
    with pytest.raises(TypeError, match="ParameterDict"):
        pd["c"] = 1.0
