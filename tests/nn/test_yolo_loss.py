"""`d2s.vision.ops.yolo_loss` against a loop-based numpy reference of
Paddle's documented YOLOv3 loss (anchor matching, ignore threshold, label
smoothing, gt_score, scale_x_y), its gradient against finite differences,
and converted on the numpy and xla backends."""
import warnings

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.vision.ops import yolo_loss

from nn_helpers import numeric_grads

RNG = np.random.default_rng(29)
ANCHORS = [10, 13, 16, 30, 33, 23, 30, 61, 62, 45, 59, 119]


def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def _sce(v, t):
    return -t * np.log(_sig(v)) - (1 - t) * np.log(1 - _sig(v))


def _iou(a, b):
    """IoU of two (cx, cy, w, h) boxes, sides clipped to [0, 1]."""
    iw = np.clip(min(a[0] + a[2] / 2, b[0] + b[2] / 2) - max(a[0] - a[2] / 2, b[0] - b[2] / 2),
                 0, 1)
    ih = np.clip(min(a[1] + a[3] / 2, b[1] + b[3] / 2) - max(a[1] - a[3] / 2, b[1] - b[3] / 2),
                 0, 1)
    inter = iw * ih
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def _ref(x, gt_box, gt_label, gt_score, anchors, mask, cls, thresh, down, smooth, scale):
    n, _, h, w = x.shape
    per = 5 + cls
    size = down * h
    v = x.reshape(n, len(mask), per, h, w)
    sw = min(1.0 / cls, 1.0 / 40)
    pos, neg = (1 - sw, sw) if smooth else (1.0, 0.0)
    loss = np.zeros(n)
    for i in range(n):
        obj = np.zeros((len(mask), h, w))
        for k, m in enumerate(mask):
            for r in range(h):
                for c in range(w):
                    t = v[i, k, :, r, c]
                    box = ((c + _sig(t[0]) * scale - 0.5 * (scale - 1)) / w,
                           (r + _sig(t[1]) * scale - 0.5 * (scale - 1)) / h,
                           np.exp(t[2]) * anchors[2 * m] / size,
                           np.exp(t[3]) * anchors[2 * m + 1] / size)
                    if max(_iou(box, g) for g in gt_box[i]) > thresh:
                        obj[k, r, c] = -1
        for j, g in enumerate(gt_box[i]):
            if g[2] + g[3] == 0:
                continue
            best = int(np.argmax([_iou((0, 0, g[2], g[3]), (0, 0, anchors[2 * a] / size,
                                                             anchors[2 * a + 1] / size))
                                  for a in range(len(anchors) // 2)]))
            if best not in mask:
                continue
            k = mask.index(best)
            gi, gj = int(g[0] * w), int(g[1] * h)
            t = v[i, k, :, gj, gi]
            s = (2 - g[2] * g[3]) * gt_score[i, j]
            loss[i] += (_sce(t[0], g[0] * w - gi) + _sce(t[1], g[1] * h - gj)
                        + abs(t[2] - np.log(g[2] * size / anchors[2 * best]))
                        + abs(t[3] - np.log(g[3] * size / anchors[2 * best + 1]))) * s
            for c in range(cls):
                loss[i] += _sce(t[5 + c], pos if c == gt_label[i, j] else neg) * gt_score[i, j]
            obj[k, gj, gi] = gt_score[i, j]
        for k in range(len(mask)):
            for r in range(h):
                for c in range(w):
                    o = v[i, k, 4, r, c]
                    if obj[k, r, c] > 0:
                        loss[i] += _sce(o, 1.0) * obj[k, r, c]
                    elif obj[k, r, c] == 0:
                        loss[i] += _sce(o, 0.0)
    return loss


def _data(n=2, b=4, cls=3, mask=(0, 1, 2), h=4):
    x = RNG.standard_normal((n, len(mask) * (5 + cls), h, h))
    gt = np.concatenate([RNG.uniform(0.05, 0.95, (n, b, 2)), RNG.uniform(0.05, 0.6, (n, b, 2))],
                        -1)
    gt[0, -1] = 0.0  # padding row
    label = RNG.integers(0, cls, (n, b)).astype(np.int32)
    score = RNG.uniform(0.3, 1.0, (n, b))
    return x, gt, label, score


@pytest.mark.parametrize("smooth,scale,with_score,mask,thresh", [
    (True, 1.0, True, [0, 1, 2], 0.5),
    (False, 1.2, False, [3, 4, 5], 0.3),
    (True, 1.0, False, [1, 3], 0.7),
])
def test_matches_reference(smooth, scale, with_score, mask, thresh):
    x, gt, label, score = _data(mask=tuple(mask))
    if not with_score:
        score = np.ones_like(score)
    got = yolo_loss(d2s.to_tensor(x), d2s.to_tensor(gt), d2s.to_tensor(label), ANCHORS, mask,
                    3, thresh, 8, gt_score=d2s.to_tensor(score) if with_score else None,
                    use_label_smooth=smooth, scale_x_y=scale)
    want = _ref(x, gt, label, score, ANCHORS, mask, 3, thresh, 8, smooth, scale)
    assert got.shape == (2,)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)


def test_gradient_matches_finite_differences():
    x, gt, label, score = _data(n=1, b=3, cls=2, h=3)

    def f(v):
        return yolo_loss(v, d2s.to_tensor(gt), d2s.to_tensor(label), ANCHORS, [0, 1, 2], 2,
                         0.5, 8, gt_score=d2s.to_tensor(score))
    xt = d2s.to_tensor(x, stop_gradient=False)
    f(xt).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), numeric_grads(f, x)[0], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    x, gt, label, score = _data()

    def f(v, g, lab, s):
        return yolo_loss(v, g, lab, ANCHORS, [0, 1, 2], 3, 0.5, 8, gt_score=s)
    args = [d2s.to_tensor(a) for a in (x, gt, label, score)]
    args[0].stop_gradient = False
    want = f(*args)
    want.sum().backward()
    g_want = args[0].grad.numpy()
    args[0].clear_grad()
    from d2s.static.backend import BackendFallbackWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)  # the xla rule really runs
        got = to_static(f, backend=backend)(*args)
        got.sum().backward()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9)
    np.testing.assert_allclose(args[0].grad.numpy(), g_want, rtol=1e-9, atol=1e-12)
