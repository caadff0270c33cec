"""`F.one_hot` with the class count read from a shape known only at run
time: a pointer network masks the points it already picked with
`one_hot(idx, points.shape[1])` (any number of points), and a segmentation
dice loss builds its targets with `one_hot(label, logits.shape[1])`."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, grads, infer_and_compare, t, train_and_compare, twins

H = 6


class PointerNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.encoder = nn.LSTM(2, H)
        self.decoder = nn.LSTMCell(2, H)
        self.w_enc = nn.Linear(H, H, bias_attr=False)
        self.w_dec = nn.Linear(H, H, bias_attr=False)
        self.v = nn.Linear(H, 1, bias_attr=False)

    def forward(self, points):                                  # [B, N, 2]
        b, n = points.shape[0], points.shape[1]
        enc, (h, c) = self.encoder(points)
        state = (h[0], c[0])
        inp = d2s.zeros([b, 2])
        picked = d2s.zeros([b, n], dtype="bool")
        log_probs, order = [], []
        for _ in range(n):
            out, state = self.decoder(inp, state)
            scores = self.v(d2s.tanh(self.w_enc(enc) + self.w_dec(out).unsqueeze(1))).squeeze(-1)
            scores = d2s.where(picked, d2s.full_like(scores, -1e9), scores)
            logp = F.log_softmax(scores, axis=-1)
            idx = logp.argmax(-1)
            picked = picked | F.one_hot(idx, n).astype("bool")
            inp = d2s.gather_nd(points, d2s.stack([d2s.arange(b), idx], 1))
            log_probs.append(logp)
            order.append(idx)
        return d2s.stack(log_probs, 1), d2s.stack(order, 1)


RNG = np.random.default_rng(5)
ANY_POINTS = [InputSpec([None, None, 2])]


@pytest.mark.parametrize("backend", BACKENDS)
def test_pointer_network_decodes_any_number_of_points_like_eager(backend):
    eager, model = twins(PointerNet)
    fn = d2s.jit.to_static(model, input_spec=ANY_POINTS, backend=backend)
    for n in (4, 6):
        _, order = infer_and_compare(eager, fn, [t(RNG.normal(size=(2, n, 2)))], backend)
        # every point picked once: the one-hot mask works
        assert (np.sort(order, axis=1) == np.arange(n)).all()


def test_pointer_network_loss_gradients_match_eager():
    """numpy; the steps run as one `while` op whose backward sums per-step
    gradients in another order than eager's tape: equal to rounding."""
    eager, model = twins(PointerNet)
    fn = d2s.jit.to_static(model, input_spec=ANY_POINTS)
    pts = t(RNG.normal(size=(2, 5, 2)))
    target = t(np.array([[4, 2, 0, 1, 3], [0, 1, 2, 3, 4]]))
    for m, f in ((eager, eager), (model, fn)):
        logp, _ = f(pts)
        F.nll_loss(logp.reshape([-1, 5]), target.reshape([-1])).backward()
    ge, gs = grads(eager), grads(model)
    for k in ge:
        np.testing.assert_allclose(gs[k], ge[k], rtol=1e-5, atol=1e-7, err_msg=k)


class Segmenter(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(2, 3, 3, padding=1)

    def forward(self, x, label):
        logits = self.conv(x)
        target = F.one_hot(label, logits.shape[1]).transpose([0, 3, 1, 2])
        prob = F.softmax(logits, axis=1)
        inter = (prob * target).sum([0, 2, 3])
        dice = 1 - ((2 * inter + 1) / ((prob + target).sum([0, 2, 3]) + 1)).mean()
        return dice + F.cross_entropy(logits.transpose([0, 2, 3, 1]), label.unsqueeze(-1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_dice_loss_with_classes_from_the_logits_shape_trains_like_eager(backend):
    batches = [(RNG.normal(size=(2, 2, 4, 3)), RNG.integers(0, 3, (2, 4, 3))) for _ in range(3)]
    spec = [InputSpec([None, None, None, None]), InputSpec([None, None, None], "int64")]
    train_and_compare(Segmenter, batches, backend, spec, opt="adam")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_label_outside_the_run_time_class_count_fails_at_run_time(backend):
    fn = d2s.jit.to_static(lambda x, y: F.one_hot(y, x.shape[1]),
                           input_spec=[InputSpec([None, None]), InputSpec([None], "int64")],
                           backend=backend)
    np.testing.assert_array_equal(fn(t(np.zeros((2, 3))), t(np.array([2, 0]))).numpy(),
                                  np.eye(3, dtype="float32")[[2, 0]])
    with pytest.raises(AssertionError, match=r"values in \[0, num_classes\)"):
        fn(t(np.zeros((2, 3))), t(np.array([3, 0])))
