"""Orthogonal, Dirac and Bilinear initializers and set_global_initializer:
Orthogonal's rows/columns are orthonormal (times gain) and as PyTorch's
orthogonal_ for the same Gaussian draw; Dirac equals torch's dirac_ and a
convolution with it passes its input through; Bilinear is the tent kernel
and a stride-2 transposed convolution with it interpolates linearly."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.nn import initializer as I


@pytest.mark.parametrize("shape,gain", [([3, 5], 1.0), ([6, 2], 2.0), ([4, 2, 3], 0.5)])
def test_orthogonal(shape, gain):
    w = I.Orthogonal(gain)(shape, "float64").numpy()
    assert list(w.shape) == shape
    flat = w.reshape(shape[0], -1)
    small = min(flat.shape)
    gram = flat @ flat.T if flat.shape[0] == small else flat.T @ flat
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(small), atol=1e-12)
    d2s.seed(3)
    a = I.Orthogonal(gain)(shape, "float32").numpy()
    d2s.seed(3)
    b = I.Orthogonal(gain)(shape, "float32").numpy()
    np.testing.assert_array_equal(a, b)   # seeded: reproducible
    assert a.dtype == np.float32


@pytest.mark.parametrize("shape,groups", [([4, 4, 3, 3], 1), ([6, 2, 3], 2), ([4, 3, 3, 3, 3], 2)])
def test_dirac_matches_torch(shape, groups):
    torch = pytest.importorskip("torch")
    w = I.Dirac(groups)(shape, "float32").numpy()
    want = torch.empty(shape)
    torch.nn.init.dirac_(want, groups=groups)
    np.testing.assert_array_equal(w, want.numpy())


def test_dirac_conv_is_identity():
    conv = nn.Conv2D(3, 3, 3, padding=1, weight_attr=I.Dirac(), bias_attr=False)
    x = d2s.to_tensor(np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype("float32"))
    np.testing.assert_allclose(conv(x).numpy(), x.numpy(), atol=1e-6)


def test_bilinear_kernel_and_upsampling():
    w = I.Bilinear()([2, 1, 4, 4], "float64").numpy()
    tent = np.array([0.25, 0.75, 0.75, 0.25])
    np.testing.assert_allclose(w[0, 0], np.outer(tent, tent))
    np.testing.assert_array_equal(w[1, 0], w[0, 0])
    # depthwise stride-2 transposed conv with it: linear interpolation inside
    x = np.arange(5.0)[None, None, None, :].repeat(5, 2)  # rows equal, columns 0..4
    up = F.conv2d_transpose(d2s.to_tensor(x), d2s.to_tensor(w[:1]), stride=2, padding=1)
    got = up.numpy()[0, 0]
    np.testing.assert_allclose(got[2, 1:-1], np.arange(0.25, 4.0, 0.5)[:8], atol=1e-12)
    with pytest.raises(ValueError, match="square"):
        I.Bilinear()([1, 1, 3, 4], "float32")


def test_set_global_initializer_comes_before_defaults_not_param_attrs():
    try:
        I.set_global_initializer(I.Constant(0.5), I.Constant(-1.0))
        lin = nn.Linear(3, 2)
        np.testing.assert_array_equal(lin.weight.numpy(), np.full((3, 2), 0.5, np.float32))
        np.testing.assert_array_equal(lin.bias.numpy(), np.full(2, -1.0, np.float32))
        own = nn.Linear(3, 2, weight_attr=d2s.ParamAttr(initializer=I.Constant(2.0)))
        np.testing.assert_array_equal(own.weight.numpy(), np.full((3, 2), 2.0, np.float32))
        np.testing.assert_array_equal(own.bias.numpy(), np.full(2, -1.0, np.float32))
    finally:
        I.set_global_initializer(None)
    lin = nn.Linear(3, 2)
    assert not np.all(lin.weight.numpy() == 0.5)
    np.testing.assert_array_equal(lin.bias.numpy(), np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="weight_init"):
        I.set_global_initializer("normal")
