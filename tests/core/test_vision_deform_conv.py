"""d2s.vision.ops.deform_conv2d / DeformConv2D (d2s/vision/_deform.py, a
composite): values vs a loop reference written from DCN's definition
(bilinear sampling at the offset positions, zero outside, mask scaling,
groups and deformable groups, stride / padding / dilation), gradients of
x, offset, mask, weight and bias by finite differences, numpy and xla
conversion, batch dim unknown, ONNX Runtime."""
import math

import numpy as np
import pytest

import d2s
from d2s.vision.ops import DeformConv2D, deform_conv2d
from ops_check import check

R = np.random.default_rng(12)


def sample(img, y, x):
    h, w = img.shape
    if y <= -1 or y >= h or x <= -1 or x >= w:
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    ly, lx = y - y0, x - x0
    total = 0.0
    for cy, wy in ((y0, 1 - ly), (y0 + 1, ly)):
        for cx, wx in ((x0, 1 - lx), (x0 + 1, lx)):
            if 0 <= cy <= h - 1 and 0 <= cx <= w - 1:
                total += wy * wx * img[cy, cx]
    return total


def ref(x, offset, weight, bias=None, stride=1, pad=0, dil=1, dg=1, groups=1, mask=None):
    n, c, h, w = x.shape
    cout, cin_g, kh, kw = weight.shape
    ho = (h + 2 * pad - (dil * (kh - 1) + 1)) // stride + 1
    wo = (w + 2 * pad - (dil * (kw - 1) + 1)) // stride + 1
    out = np.zeros((n, cout, ho, wo))
    for b in range(n):
        for o in range(cout):
            g = o // (cout // groups)
            for ci in range(cin_g):
                ch = g * cin_g + ci
                d = ch // (c // dg)
                for a in range(kh):
                    for e in range(kw):
                        k = a * kw + e
                        for i in range(ho):
                            for j in range(wo):
                                dy = offset[b, d * 2 * kh * kw + 2 * k, i, j]
                                dx = offset[b, d * 2 * kh * kw + 2 * k + 1, i, j]
                                v = sample(x[b, ch], i * stride - pad + a * dil + dy,
                                           j * stride - pad + e * dil + dx)
                                if mask is not None:
                                    v *= mask[b, d * kh * kw + k, i, j]
                                out[b, o, i, j] += weight[o, ci, a, e] * v
    if bias is not None:
        out += bias.reshape(1, -1, 1, 1)
    return out.astype(x.dtype)


X = R.standard_normal((1, 2, 4, 4))
OFF = R.uniform(-1.5, 1.5, size=(1, 2 * 4, 3, 3))        # 2x2 kernel -> 3x3 output
W = R.standard_normal((2, 2, 2, 2))
CASES = [
    ("v1_bias", lambda x, o, w, b: deform_conv2d(x, o, w, b), [X, OFF, W, R.standard_normal(2)],
     lambda x, o, w, b: ref(x, o, w, b)),
    ("v2_mask_stride_pad", lambda x, o, w, m: deform_conv2d(x, o, w, stride=2, padding=1, mask=m),
     [X, R.uniform(-1, 1, size=(1, 8, 3, 3)), W, R.uniform(0, 1, size=(1, 4, 3, 3))],
     lambda x, o, w, m: ref(x, o, w, stride=2, pad=1, mask=m)),
    ("groups_and_deformable_groups",
     lambda x, o, w: deform_conv2d(x, o, w, dilation=2, deformable_groups=2, groups=2),
     [X, R.uniform(-1, 1, size=(1, 2 * 2 * 4, 2, 2)), R.standard_normal((2, 1, 2, 2))],
     lambda x, o, w: ref(x, o, w, dil=2, dg=2, groups=2)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_deform_conv2d(case):
    name, fn, arrays, want = case
    check(fn, arrays, want, unknown="first")


def test_deform_conv2d_layer_and_zero_offset_is_conv():
    d2s.seed(3)
    layer = DeformConv2D(2, 3, 3, padding=1)
    x = d2s.to_tensor(X.astype("float32"))
    zero = d2s.zeros([1, 18, 4, 4], "float32")
    got = layer(x, zero).numpy()
    conv = d2s.nn.functional.conv2d(x, layer.weight, layer.bias, padding=1).numpy()
    np.testing.assert_allclose(got, conv, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="offset must be"):
        layer(x, d2s.zeros([1, 9, 4, 4], "float32"))
