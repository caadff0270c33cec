"""ViT position embeddings resized to the input's patch grid (HuggingFace
ViT / timm `interpolate_pos_encoding`, `resample_abs_pos_embed`): the patch
part of the learned embedding reshaped to its grid and resized with
`F.interpolate(..., mode="bicubic")` to the image's grid. Bicubic matches
PyTorch's (Keys' kernel, a = -0.75, borders clamped) for both
`align_corners`, and the model converts on numpy and xla with the image
size known only at run time (the grid's size read from the input),
training like eager."""
import math

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, t, train_and_compare

P, D = 2, 4  # patch size, width


class PatchEmbedWithPos(nn.Layer):
    def __init__(self, grid=2):
        super().__init__()
        self.grid = grid
        self.proj = nn.Conv2D(3, D, P, stride=P)
        self.cls_token = self.create_parameter([1, 1, D])
        self.pos_embed = self.create_parameter([1, grid * grid + 1, D])
        self.head = nn.Linear(D, 2)

    def interpolate_pos_encoding(self, height, width):
        cls_pos = self.pos_embed[:, :1]
        patch_pos = self.pos_embed[:, 1:].reshape([1, self.grid, self.grid, D])
        patch_pos = patch_pos.transpose([0, 3, 1, 2])
        patch_pos = F.interpolate(patch_pos, size=(height // P, width // P), mode="bicubic",
                                  align_corners=False)
        patch_pos = patch_pos.transpose([0, 2, 3, 1]).reshape([1, -1, D])
        return d2s.concat([cls_pos, patch_pos], axis=1)

    def forward(self, pixels):
        height, width = pixels.shape[2], pixels.shape[3]
        x = self.proj(pixels).flatten(2).transpose([0, 2, 1])
        cls = self.cls_token.expand([x.shape[0], -1, -1])
        x = d2s.concat([cls, x], axis=1) + self.interpolate_pos_encoding(height, width)
        return self.head(x.mean(axis=1))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(7, 3), (8, 10), (2, 2)])
def test_bicubic_matches_pytorch(size, align_corners):
    torch = pytest.importorskip("torch")
    x = np.random.RandomState(0).randn(1, 2, 4, 5).astype("float32")
    got = F.interpolate(t(x), size=size, mode="bicubic", align_corners=align_corners).numpy()
    expected = torch.nn.functional.interpolate(torch.tensor(x), size=size, mode="bicubic",
                                               align_corners=align_corners).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=2e-6)


def test_bicubic_scale_factor_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = np.random.RandomState(1).randn(2, 1, 3, 4).astype("float32")
    got = F.interpolate(t(x), scale_factor=2, mode="bicubic").numpy()
    expected = torch.nn.functional.interpolate(torch.tensor(x), scale_factor=2,
                                               mode="bicubic").numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=2e-6)


def _loss(out, pixels, labels):
    return F.cross_entropy(out, labels)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vit_at_run_time_image_sizes_trains_like_eager(backend):
    rng = np.random.RandomState(2)
    batches = [(rng.randn(2, 3, h, w).astype("float32"), np.array([0, 1]))
               for h, w in ((4, 4), (6, 8), (4, 4), (8, 6))]
    spec = [InputSpec([None, 3, None, None], "float32")]
    train_and_compare(PatchEmbedWithPos, batches, backend, input_spec=spec, loss=_loss)
