"""Two small models ported with the API beyond the first target list
(d2s.nn.functional's patch, vision, activation and loss additions, issue 25):

* a text recognizer with a spatial transformer in front (a localization net
  whose affine map, initialized to the identity, feeds `affine_grid` +
  `grid_sample`), a conv backbone collapsing the height, a spectrally
  normalized projection (its power-iteration buffers move every training
  step), a GLU, and CTC loss over the columns;
* a SegNet-style encoder/decoder: `MaxPool2D(return_mask=True)` and
  `MaxUnPool2D`, pixel unshuffle / shuffle around a conv, `Unfold`/`Fold`,
  local response normalization, channel shuffle, trained on a
  Gaussian NLL.

Each is trained eagerly and converted (numpy and xla) with an unknown batch
dim; losses, gradients, parameters and buffers must agree (tests/corpus/harness.py)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, build, save_load_infer, t, train_and_compare
from xla_budget import for_backend

CLASSES, LABEL_LEN = 5, 3


class STNRecognizer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2D(1, 2, 3, padding=1), nn.ReLU(),
                                 nn.AdaptiveMaxPool2D([2, 2]), nn.Flatten(), nn.Linear(8, 6))
        self.loc[4].weight.set_value(np.zeros((8, 6), np.float32))
        self.loc[4].bias.set_value(np.array([1, 0, 0, 0, 1, 0], np.float32))
        self.backbone = nn.Sequential(nn.Conv2D(1, 4, 3, padding=1), nn.ReLU(),
                                      nn.MaxPool2D((2, 1), (2, 1)),
                                      nn.Conv2D(4, 8, (4, 1)))           # H 8 -> 4 -> 1
        self.proj = nn.utils.spectral_norm(nn.Linear(8, 2 * CLASSES))
        self.glu = nn.GLU()
        self.ctc = nn.CTCLoss(blank=0)

    def forward(self, img):
        theta = self.loc(img).reshape([-1, 2, 3])
        grid = F.affine_grid(theta, img.shape, align_corners=False)
        img = F.grid_sample(img, grid, align_corners=False)
        feat = self.backbone(img).squeeze(axis=2).transpose([2, 0, 1])   # [W, B, C]
        return self.glu(self.proj(feat))                                   # [W, B, classes]

    def loss(self, img, labels, input_lengths, label_lengths):
        return self.ctc(self(img), labels, input_lengths, label_lengths)


class SegNetTiny(nn.Layer):
    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2D(2, 4, 3, padding=1)
        self.pool = nn.MaxPool2D(2, return_mask=True)
        self.unpool = nn.MaxUnPool2D(2)
        self.down = nn.PixelUnshuffle(2)
        self.mid = nn.Conv2D(16, 16, 1)
        self.up = nn.PixelShuffle(2)
        self.lrn = nn.LocalResponseNorm(3)
        self.head = nn.Conv2D(4, 2, 1)

    def forward(self, x):
        h = F.relu(self.enc(x))                          # [B, 4, 4, 4]
        p, mask = self.pool(h)                           # [B, 4, 2, 2]
        u = self.unpool(p, mask)                         # [B, 4, 4, 4]
        m = self.up(self.mid(self.down(u)))              # [B, 4, 4, 4]
        cols = F.unfold(m, 2, paddings=1)
        m = F.fold(cols, [4, 4], 2, paddings=1) * 0.25
        m = F.channel_shuffle(self.lrn(m), 2)
        return self.head(m)

    def loss(self, x, target):
        out = self(x)
        var = F.softplus(out[:, 1:]) + 0.1
        return F.gaussian_nll_loss(out[:, :1], target, var)


R = np.random.default_rng(25)


def _ctc_batch(n):
    return (R.normal(size=(n, 1, 8, 6)), R.integers(1, CLASSES, (n, LABEL_LEN)),
            np.full(n, 6, np.int64), R.integers(1, LABEL_LEN + 1, n))


CTC_SPEC = [InputSpec([None, 1, 8, 6], "float32"), InputSpec([None, LABEL_LEN], "int64"),
            InputSpec([None], "int64"), InputSpec([None], "int64")]
SEG_SPEC = [InputSpec([None, 2, 4, 4], "float32"), InputSpec([None, 1, 4, 4], "float32")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_stn_ctc_recognizer_trains_like_eager(backend):
    batches = for_backend([_ctc_batch(n) for n in (2, 2, 3)], backend)
    eager, model, fn = train_and_compare(STNRecognizer, batches, backend, CTC_SPEC,
                                         method="loss", opt="adam")
    assert len(fn.program_cache) == 1
    # the spectral norm's power iteration moved (and the harness found it moved as eagerly)
    assert not np.allclose(model.proj.weight_u.numpy(), build(STNRecognizer).proj.weight_u.numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_segnet_pool_unpool_shuffle_trains_like_eager(backend):
    batches = for_backend([(R.normal(size=(n, 2, 4, 4)), R.normal(size=(n, 1, 4, 4)))
                           for n in (2, 2, 3)], backend)
    _, _, fn = train_and_compare(SegNetTiny, batches, backend, SEG_SPEC, method="loss",
                                 opt="adam")
    assert len(fn.program_cache) == 1


def test_segnet_and_recognizer_save_load_infer(tmp_path):
    seg = build(SegNetTiny)
    save_load_infer(seg, SEG_SPEC[:1], [t(R.normal(size=(3, 2, 4, 4)))], tmp_path / "seg")
    rec = build(STNRecognizer)
    save_load_infer(rec, CTC_SPEC[:1], [t(R.normal(size=(2, 1, 8, 6)))], tmp_path / "rec")
