"""Image-layout functions of d2s.nn.functional (d2s/nn/vision_functional.py):
pixel (un)shuffle, channel shuffle, affine_grid, grid_sample (every mode,
padding mode and align_corners), local_response_norm, zeropad2d,
adaptive_avg_pool3d against PyTorch (values; gradients by finite differences
of the torch reference), to_static on numpy and xla, unknown dims, ONNX
Runtime; channel dropout and alpha dropout by their structure."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import nn
from ops_check import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional
R = np.random.default_rng(7)


def t(a):
    return torch.tensor(a)


def rn(*s):
    return R.standard_normal(s)


def _grid_case(mode, padding_mode, align):
    grid = R.uniform(-1.3, 1.3, (1, 2, 3, 2))
    return (f"grid_sample_{mode}_{padding_mode}_{'ac' if align else 'noac'}",
            lambda x, g: F.grid_sample(x, g, mode, padding_mode, align),
            [rn(1, 2, 3, 4), grid],
            lambda x, g: TF.grid_sample(t(x), t(g), mode, padding_mode, align).numpy(), "all")


CASES = [
    ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), [rn(1, 8, 2, 3)],
     lambda x: TF.pixel_shuffle(t(x), 2).numpy(), "all"),
    ("pixel_shuffle_nhwc", lambda x: F.pixel_shuffle(x, 2, "NHWC"), [rn(1, 2, 3, 4)],
     lambda x: TF.pixel_shuffle(t(x).permute(0, 3, 1, 2), 2).permute(0, 2, 3, 1).numpy(),
     "all"),
    ("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), [rn(1, 2, 4, 2)],
     lambda x: TF.pixel_unshuffle(t(x), 2).numpy(), "all"),
    ("channel_shuffle", lambda x: F.channel_shuffle(x, 3), [rn(1, 6, 2, 2)],
     lambda x: TF.channel_shuffle(t(x), 3).numpy(), "all"),
    ("affine_grid", lambda th: F.affine_grid(th, [2, 1, 3, 4]), [rn(2, 2, 3)],
     lambda th: TF.affine_grid(t(th), (2, 1, 3, 4), align_corners=True).numpy(), "first"),
    ("affine_grid_noac", lambda th: F.affine_grid(th, [1, 1, 2, 3], align_corners=False),
     [rn(1, 2, 3)],
     lambda th: TF.affine_grid(t(th), (1, 1, 2, 3), align_corners=False).numpy(), "first"),
] + [_grid_case(m, p, a) for m in ("bilinear", "nearest")
     for p in ("zeros", "border", "reflection") for a in (True, False)] + [
    ("local_response_norm", lambda x: F.local_response_norm(x, 3, 0.1, 0.75, 1.0),
     [rn(1, 4, 2, 2)], lambda x: TF.local_response_norm(t(x), 3, 0.1, 0.75, 1.0).numpy(),
     "all"),
    ("local_response_norm_even_3d", lambda x: F.local_response_norm(x, 2, 0.2, 0.5, 2.0),
     [rn(2, 3, 4)], lambda x: TF.local_response_norm(t(x), 2, 0.2, 0.5, 2.0).numpy(), "all"),
    ("zeropad2d", lambda x: F.zeropad2d(x, [1, 0, 2, 1]), [rn(1, 2, 2, 3)],
     lambda x: TF.pad(t(x), (1, 0, 2, 1)).numpy(), "first"),
    ("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, [2, 1, 3]), [rn(1, 2, 3, 2, 5)],
     lambda x: TF.adaptive_avg_pool3d(t(x), (2, 1, 3)).numpy(), "first"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_vision_op(case):
    name, fn, arrays, ref, unknown = case
    check(fn, arrays, ref, unknown=unknown)


def test_layers_match_torch():
    x = rn(1, 4, 2, 2)
    tx = d2s.to_tensor(x)
    np.testing.assert_allclose(nn.PixelShuffle(2)(tx).numpy(), TF.pixel_shuffle(t(x), 2).numpy())
    np.testing.assert_allclose(nn.PixelUnshuffle(2)(tx).numpy(),
                               TF.pixel_unshuffle(t(x), 2).numpy())
    np.testing.assert_allclose(nn.ChannelShuffle(2)(tx).numpy(),
                               TF.channel_shuffle(t(x), 2).numpy())
    np.testing.assert_allclose(nn.LocalResponseNorm(3)(tx).numpy(),
                               TF.local_response_norm(t(x), 3).numpy())
    np.testing.assert_allclose(nn.ZeroPad2D(1)(tx).numpy(), TF.pad(t(x), (1, 1, 1, 1)).numpy())
    v = rn(1, 1, 2, 2, 2)
    np.testing.assert_allclose(nn.Pad3D([1, 0, 0, 1, 1, 0], mode="replicate")(
        d2s.to_tensor(v)).numpy(), TF.pad(t(v), (1, 0, 0, 1, 1, 0), mode="replicate").numpy())
    np.testing.assert_allclose(nn.AdaptiveAvgPool3D(1)(d2s.to_tensor(v)).numpy(),
                               TF.adaptive_avg_pool3d(t(v), 1).numpy())


@pytest.mark.parametrize("fn, shape, channel", [
    (lambda x: F.dropout2d(x, 0.5), (4, 6, 3, 3), (0, 1)),
    (lambda x: F.dropout2d(x, 0.5, data_format="NHWC"), (4, 3, 3, 6), (0, 3)),
    (lambda x: F.dropout3d(x, 0.5), (4, 6, 2, 2, 2), (0, 1))])
def test_channel_dropout_drops_whole_channels(fn, shape, channel):
    x = np.ones(shape)
    out = fn(d2s.to_tensor(x)).numpy()
    per = np.moveaxis(out, channel, (0, 1)).reshape(shape[channel[0]], shape[channel[1]], -1)
    assert set(np.unique(per)) <= {0.0, 2.0}
    assert (per.min(axis=2) == per.max(axis=2)).all()  # one keep/drop per channel
    assert 0 < (per[:, :, 0] == 0).sum() < per[:, :, 0].size
    layer = nn.Dropout2D(0.5) if len(shape) == 4 else nn.Dropout3D(0.5)
    layer.eval()
    np.testing.assert_array_equal(layer(d2s.to_tensor(x)).numpy(), x)


def test_alpha_dropout_keeps_selu_statistics():
    x = R.standard_normal(20000)
    out = F.alpha_dropout(d2s.to_tensor(x), 0.2).numpy()
    assert abs(out.mean()) < 0.05 and abs(out.std() - 1.0) < 0.05
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - 0.2) * (1 + 0.2 * alpha_p ** 2)) ** -0.5
    dropped = np.isclose(out, a * alpha_p - a * alpha_p * 0.2)
    np.testing.assert_allclose(out[~dropped], a * x[~dropped] - a * alpha_p * 0.2)
    assert 0.15 < dropped.mean() < 0.25
    np.testing.assert_array_equal(F.alpha_dropout(d2s.to_tensor(x), 0.2, training=False).numpy(),
                                  x)
    layer = nn.AlphaDropout(0.2)
    layer.eval()
    np.testing.assert_array_equal(layer(d2s.to_tensor(x)).numpy(), x)


def test_bad_arguments_name_the_function():
    with pytest.raises(ValueError, match="pixel_shuffle: the 6 channels"):
        F.pixel_shuffle(d2s.to_tensor(rn(1, 6, 2, 2)), 2)
    with pytest.raises(ValueError, match="grid_sample: mode"):
        F.grid_sample(d2s.to_tensor(rn(1, 1, 2, 2)), d2s.to_tensor(rn(1, 1, 1, 2)), "bicubic")
    with pytest.raises(ValueError, match="channel_shuffle: groups=4"):
        F.channel_shuffle(d2s.to_tensor(rn(1, 6, 2, 2)), 4)
