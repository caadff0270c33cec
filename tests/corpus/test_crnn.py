"""A CRNN text-recognition head (PaddleOCR's rec model shape): a small conv
backbone collapses the height, `squeeze` + `transpose` turn the feature map
`[B, C, 1, W]` into a sequence `[B, W, C]`, a bidirectional GRU reads it,
and a linear layer gives per-column class scores; trained on a per-column
cross-entropy (CTC-free), decoded greedily by `argmax` then merging repeats
and dropping blanks with a mask. Variable batch and image width (with a
`None` width the GRU's steps are one `while` op, whose backward sums the
per-step weight gradients in another order than eager's tape: equal to
rounding, not bitwise)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, grads, infer_and_compare, t, train_and_compare, twins
from xla_budget import for_backend

CLASSES, BLANK, H = 5, 0, 8


class CRNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2D(1, 4, 3, padding=1, bias_attr=False), nn.BatchNorm2D(4), nn.ReLU(),
            nn.MaxPool2D(kernel_size=(2, 1), stride=(2, 1)),
            nn.Conv2D(4, 6, 3, padding=1), nn.ReLU(),
            nn.MaxPool2D(kernel_size=(2, 1), stride=(2, 1)),
            nn.Conv2D(6, 6, (2, 1)), nn.ReLU())             # height 8 -> 4 -> 2 -> 1
        self.rnn = nn.GRU(6, H, direction="bidirect")
        self.fc = nn.Linear(2 * H, CLASSES)

    def forward(self, img):                                 # [B, 1, 8, W]
        feat = self.backbone(img)                           # [B, C, 1, W]
        seq = feat.squeeze(axis=2).transpose([0, 2, 1])     # [B, W, C]
        out, _ = self.rnn(seq)
        return self.fc(out)                                 # [B, W, classes]

    def loss(self, img, label):
        logits = self(img)
        return F.cross_entropy(logits.reshape([-1, CLASSES]), label.reshape([-1]))

    def decode(self, img):
        """Greedy CTC-style decoding: best class per column; a column is kept
        when it is not blank and differs from the previous one (-1 elsewhere)."""
        best = d2s.argmax(self(img), axis=-1)               # [B, W]
        prev = d2s.concat([d2s.full_like(best[:, :1], -1), best[:, :-1]], axis=1)
        keep = (best != BLANK) & (best != prev)
        return d2s.where(keep, best, d2s.full_like(best, -1))


RNG = np.random.default_rng(19)
BATCHES = [(RNG.normal(size=(n, 1, 8, 6)), RNG.integers(0, CLASSES, (n, 6))) for n in (2, 3, 2)]
SPEC = [InputSpec([None, 1, 8, None], "float32"), InputSpec([None, None], "int64")]
FIXED_WIDTH = [InputSpec([None, 1, 8, 6], "float32"), InputSpec([None, 6], "int64")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_crnn_trains_like_eager(backend):
    _, _, fn = train_and_compare(CRNN, for_backend(BATCHES, backend), backend, FIXED_WIDTH, method="loss",
                                 opt="adam")
    assert len(fn.program_cache) == 1


def test_crnn_any_width_loss_and_gradients():
    """numpy only: on xla every width is its own executable anyway."""
    eager, model = twins(CRNN)
    fn = d2s.jit.to_static(model.loss, input_spec=SPEC)
    tol = dict(rtol=1e-5, atol=1e-7)
    for n, w in ((2, 6), (3, 4)):
        img, lab = t(RNG.normal(size=(n, 1, 8, w))), t(RNG.integers(0, CLASSES, (n, w)))
        a, e = fn(img, lab), eager.loss(img, lab)
        np.testing.assert_allclose(a.numpy(), e.numpy(), **tol)
        a.backward()
        e.backward()
        ga, ge = grads(model), grads(eager)
        for k in ge:
            np.testing.assert_allclose(ga[k], ge[k], err_msg=k, **tol)
        model.clear_gradients()
        eager.clear_gradients()
    assert len(fn.program_cache) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_crnn_greedy_decode(backend):
    eager, model = twins(CRNN)
    eager.eval()
    model.eval()
    dec = d2s.jit.to_static(model.decode, input_spec=SPEC[:1], backend=backend)
    out = infer_and_compare(eager.decode, dec, [t(RNG.normal(size=(2, 1, 8, 6)))], backend)
    assert out.shape == (2, 6)
