"""`F.interpolate` under an InputSpec's `None` spatial dims, as PaddleSeg,
PaddleOCR and HRNet write it: a segmentation head resized to the input's
size (`F.interpolate(x, paddle.shape(img)[2:], mode='bilinear',
align_corners=False)`), a DB head upsampled by `scale_factor=2`, branches
fused at `y.shape[2:]`.

Sizes known only at run time are sampled as the known-size path samples
them (positions computed in the program): eager and converted agree on
values and gradients, on numpy and xla, at several input sizes."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS


class SegHead(nn.Layer):
    """PP-LiteSeg-style: a low-resolution feature fused into a higher one, the
    logits resized back to the image."""

    def __init__(self, mode, align_corners, how):
        super().__init__()
        self.low = nn.Conv2D(3, 4, 3, stride=2, padding=1)
        self.high = nn.Conv2D(3, 4, 1)
        self.cls = nn.Conv2D(4, 2, 1)
        self.mode, self.align_corners, self.how = mode, align_corners, how

    def forward(self, img):
        high, low = self.high(img), self.low(img)
        if self.how == "shape_of":
            size = d2s.shape(high)[2:]
        elif self.how == "shape_attr":
            size = high.shape[2:]
        else:
            size = None
        if size is None:
            up = F.interpolate(low, scale_factor=2, mode=self.mode,
                               align_corners=self.align_corners)  # (even sizes)
        else:
            up = F.interpolate(low, size, mode=self.mode, align_corners=self.align_corners)
        logit = self.cls(F.relu(high + up))
        return F.interpolate(logit, d2s.shape(img)[2:], mode=self.mode,
                             align_corners=self.align_corners)


CASES = [("bilinear", False, "shape_of"), ("bilinear", True, "shape_attr"),
         ("nearest", False, "scale"), ("bilinear", False, "scale")]
SIZES = [(2, 3, 8, 6), (1, 3, 4, 10)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode,align_corners,how", CASES)
def test_resize_to_run_time_sizes_matches_eager(backend, mode, align_corners, how):
    d2s.seed(0)
    eager = SegHead(mode, align_corners, how)
    model = SegHead(mode, align_corners, how)
    model.set_state_dict(eager.state_dict())
    static = d2s.jit.to_static(model.forward, backend=backend,
                               input_spec=[InputSpec([None, 3, None, None], "float32")])
    rng = np.random.default_rng(0)
    for shape in SIZES:
        img = rng.normal(size=shape).astype("float32")
        outs = []
        for fn, layer in ((eager, eager), (static, model)):
            x = d2s.to_tensor(img, stop_gradient=False)
            out = fn(x)
            (out * out).sum().backward()
            outs.append((out.numpy(), x.grad.numpy(), layer.low.weight.grad.numpy()))
            layer.clear_gradients()
        (e_out, e_gx, e_gw), (s_out, s_gx, s_gw) = outs
        assert s_out.shape == e_out.shape == (shape[0], 2) + shape[2:]
        np.testing.assert_allclose(s_out, e_out, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(s_gx, e_gx, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(s_gw, e_gw, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("align_mode", [0, 1])
def test_run_time_sizes_sample_like_known_sizes(align_mode):
    """Down- and up-sampling by sizes read from another tensor at run time
    give what the known-size path gives for the same sizes."""
    def resize(x, y):
        return F.interpolate(x, size=y.shape[2:], mode="bilinear", align_mode=align_mode)

    static = d2s.jit.to_static(resize, input_spec=[InputSpec([None, 1, None, None]),
                                                   InputSpec([None, 1, None, None])])
    x = d2s.to_tensor(np.arange(20, dtype="float32").reshape(1, 1, 4, 5))
    for out_hw in [(7, 3), (2, 9), (1, 1)]:
        y = d2s.zeros((1, 1) + out_hw)
        expected = F.interpolate(x, size=list(out_hw), mode="bilinear", align_mode=align_mode)
        np.testing.assert_allclose(static(x, y).numpy(), expected.numpy(), rtol=1e-6)


def test_size_tensor_of_wrong_rank_is_named():
    def resize(x):
        return F.interpolate(x, size=d2s.shape(x).reshape([2, 2]), mode="nearest")

    static = d2s.jit.to_static(resize, input_spec=[InputSpec([None, 1, None, None])])
    with pytest.raises(ValueError, match="interpolate: size must be a list or a 1-D tensor"):
        static(d2s.ones([1, 1, 2, 2]))
