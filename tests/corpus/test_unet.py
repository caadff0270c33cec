"""A tiny UNet (segmentation, as ported from PaddleSeg / the PyTorch UNet
reference): double-conv blocks with BatchNorm, max-pool downsampling,
`Conv2DTranspose` upsampling and skip connections joined by `concat` on the
channel axis; trained on a per-pixel cross-entropy with a variable batch,
then evaluated; with fixed and with `None` image sizes (as PaddleSeg
exports)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, save_load_infer, t, train_and_compare
from xla_budget import for_backend


class DoubleConv(nn.Layer):
    def __init__(self, cin, cout):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2D(cin, cout, 3, padding=1, bias_attr=False), nn.BatchNorm2D(cout), nn.ReLU(),
            nn.Conv2D(cout, cout, 3, padding=1, bias_attr=False), nn.BatchNorm2D(cout), nn.ReLU())

    def forward(self, x):
        return self.block(x)


class Up(nn.Layer):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.Conv2DTranspose(cin, cin // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(cin, cout)

    def forward(self, x, skip):
        x = self.up(x)
        return self.conv(d2s.concat([skip, x], axis=1))


class UNet(nn.Layer):
    def __init__(self, num_classes=2, base=4):
        super().__init__()
        self.inc = DoubleConv(1, base)
        self.down1 = nn.Sequential(nn.MaxPool2D(2), DoubleConv(base, base * 2))
        self.down2 = nn.Sequential(nn.MaxPool2D(2), DoubleConv(base * 2, base * 4))
        self.up1 = Up(base * 4, base * 2)
        self.up2 = Up(base * 2, base)
        self.outc = nn.Conv2D(base, num_classes, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


SPEC = [InputSpec([None, 1, 8, 8], "float32")]
ANY_SIZE = [InputSpec([None, 1, None, None], "float32")]
RNG = np.random.default_rng(12)
BATCHES = [(RNG.normal(size=(n, 1, 8, 8)), RNG.integers(0, 2, (n, 8, 8))) for n in (2, 3, 2)]


def seg_loss(logits, x, y):
    return F.cross_entropy(logits.transpose([0, 2, 3, 1]).reshape([-1, 2]), y.reshape([-1]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_unet_trains_then_evaluates_like_eager(backend):
    eager, model, fwd = train_and_compare(UNet, for_backend(BATCHES, backend), backend, SPEC,
                                          loss=seg_loss)
    assert len(fwd.program_cache) == 1          # one program for every batch size
    eager.eval()
    model.eval()
    x = t(RNG.normal(size=(2, 1, 8, 8)))
    close(fwd(x).numpy(), eager(x).numpy(), backend, "eval output")


def test_unet_save_load_infer(tmp_path):
    model, _, _ = train_and_compare(UNet, BATCHES[:1], "numpy", SPEC, loss=seg_loss)
    save_load_infer(model, SPEC, [t(RNG.normal(size=(2, 1, 8, 8)))], tmp_path)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unet_with_any_image_size_converts(backend):
    """The transposed convs' output size follows the input's when the program
    runs, and the skip connections' concat joins maps of run-time size."""
    batches = [(RNG.normal(size=(2, 1, s, s)), RNG.integers(0, 2, (2, s, s)))
               for s in (8, 4, 8)]
    eager, model, fwd = train_and_compare(UNet, for_backend(batches, backend), backend,
                                          ANY_SIZE, loss=seg_loss)
    assert len(fwd.program_cache) == 1
    eager.eval()
    model.eval()
    x = t(RNG.normal(size=(1, 1, 12, 4)))
    close(fwd(x).numpy(), eager(x).numpy(), backend, "eval output (12x4)")
