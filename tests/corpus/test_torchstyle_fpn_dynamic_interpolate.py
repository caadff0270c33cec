"""torchvision-style feature pyramid (FPN): 1x1 lateral convs, a top-down
path that upsamples the coarser map to the lateral's size with
`F.interpolate(last_inner, size=lateral.shape[-2:])`, 3x3 output convs, the
maps returned in an `OrderedDict`. Detection models take images of any
size, so the spatial dims are `None` in the InputSpec: the resize sizes are
known only at run time (one program serves every image size). Compared
with eager on numpy and xla: outputs, gradients and optimizer steps over
batches of two image sizes, for nearest, bilinear and align_corners
resizing and for `scale_factor`; and jit.save -> jit.load -> infer."""
from collections import OrderedDict

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close_tree, as_numpy, save_load_infer, t, train_and_compare

CHANNELS = (2, 3, 4)


class FPN(nn.Layer):
    def __init__(self, mode="nearest", align_corners=False, by_scale=False):
        super().__init__()
        self.mode, self.align_corners, self.by_scale = mode, align_corners, by_scale
        self.inner_blocks = nn.LayerList([nn.Conv2D(c, 3, 1) for c in CHANNELS])
        self.layer_blocks = nn.LayerList([nn.Conv2D(3, 3, 3, padding=1) for _ in CHANNELS])

    def _up(self, x, like):
        if self.by_scale:
            return F.interpolate(x, scale_factor=2, mode=self.mode)
        if self.mode == "nearest":
            return F.interpolate(x, size=like.shape[-2:], mode="nearest")
        return F.interpolate(x, size=like.shape[-2:], mode=self.mode,
                             align_corners=self.align_corners)

    def forward(self, c2, c3, c4):
        feats = [c2, c3, c4]
        last_inner = self.inner_blocks[-1](feats[-1])
        results = [self.layer_blocks[-1](last_inner)]
        for idx in range(len(feats) - 2, -1, -1):
            lateral = self.inner_blocks[idx](feats[idx])
            last_inner = lateral + self._up(last_inner, lateral)
            results.insert(0, self.layer_blocks[idx](last_inner))
        return OrderedDict([(name, r) for name, r in zip(["p2", "p3", "p4"], results)])


SPEC = [InputSpec([None, c, None, None], "float32") for c in CHANNELS]
VARIANTS = {"nearest": ("nearest", False, False), "bilinear": ("bilinear", False, False),
            "bilinear_corners": ("bilinear", True, False), "scale_factor": ("nearest", False, True)}


def _batch(rng, h, w):
    sizes = [(h, w), (h // 2, w // 2), (h // 4, w // 4)]  # each level halves the last
    return tuple(rng.randn(2, c, a, b).astype("float32") for c, (a, b) in zip(CHANNELS, sizes))


def _loss(out, *batch):
    return sum((v * v).mean() * (i + 1) for i, v in enumerate(out.values()))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_fpn_with_unknown_image_size_trains_like_eager(variant, backend):
    rng = np.random.RandomState(0)
    batches = [_batch(rng, 8, 8), _batch(rng, 12, 8), _batch(rng, 8, 8)]
    if VARIANTS[variant][0] == "bilinear":  # odd sizes: the top-down sizes do not double
        batches.append(tuple(rng.randn(1, c, h, w).astype("float32")
                             for c, (h, w) in zip(CHANNELS, [(7, 5), (4, 3), (2, 2)])))
    train_and_compare(FPN, batches, backend, input_spec=SPEC, loss=_loss, ctor=VARIANTS[variant])


@pytest.mark.parametrize("backend", BACKENDS)
def test_fpn_outputs_at_two_sizes_from_one_program(backend):
    d2s.seed(0)
    model = FPN("bilinear")
    static = d2s.jit.to_static(model, input_spec=SPEC, backend=backend)
    rng = np.random.RandomState(1)
    for h, w in ((8, 12), (16, 8)):
        inputs = [t(a) for a in _batch(rng, h, w)]
        out = static(*inputs)
        assert type(out) is OrderedDict and list(out) == ["p2", "p3", "p4"]
        assert tuple(out["p2"].shape) == (2, 3, h, w)
        close_tree(as_numpy(out), as_numpy(model(*inputs)), backend, f"outputs at {h}x{w}")


def test_fpn_saved_with_unknown_sizes_infers(tmp_path):
    d2s.seed(0)
    model = FPN("bilinear", align_corners=True)
    inputs = [t(a) for a in _batch(np.random.RandomState(2), 8, 12)]
    save_load_infer(model, SPEC, inputs, tmp_path)


def test_interpolate_size_from_a_run_time_tensor_matches_eager():
    """`size` given as a shape read inside the program, with the input's own
    dims unknown too, on every mode; eager embeds the same matrices."""
    x = np.random.RandomState(3).randn(1, 2, 5, 3).astype("float32")
    like = np.zeros((1, 1, 7, 4), "float32")
    for mode, corners in (("nearest", False), ("bilinear", False), ("bilinear", True)):
        def f(x, like):
            return F.interpolate(x, size=like.shape[-2:], mode=mode, align_corners=corners)
        static = d2s.jit.to_static(f, input_spec=[InputSpec([None, 2, None, None]),
                                                  InputSpec([None, 1, None, None])])
        np.testing.assert_array_equal(static(t(x), t(like)).numpy(), f(t(x), t(like)).numpy())
