"""d2s.vision.ops.roi_align / RoIAlign (d2s/core/ops/detection_ops.py):
values vs a sample-by-sample numpy reference written from the definition
(bilinear samples on a grid per bin, averaged; Paddle's rules for samples
outside the map, `aligned`, adaptive grids), gradients w.r.t. x by finite
differences, converted on numpy and xla, unknown dims, ONNX Runtime (an Einsum
of the same factorized form)."""
import math

import numpy as np
import pytest

import d2s
from d2s.vision.ops import RoIAlign, roi_align
from ops_check import check

R = np.random.default_rng(3)


def bilinear(img, y, x):
    _, h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros(img.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[:, y0, x0] + (1 - ly) * lx * img[:, y0, x1]
            + ly * (1 - lx) * img[:, y1, x0] + ly * lx * img[:, y1, x1])


def ref_roi_align(x, boxes, boxes_num, ph, pw, scale=1.0, ratio=-1, aligned=True):
    batch = np.repeat(np.arange(x.shape[0]), boxes_num)
    out = np.zeros((len(boxes), x.shape[1], ph, pw), x.dtype)
    off = 0.5 if aligned else 0.0
    for r, box in enumerate(boxes.astype(np.float64)):
        x1, y1, x2, y2 = box * scale - off
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else math.ceil(rh / ph)
        gw = ratio if ratio > 0 else math.ceil(rw / pw)
        for i in range(ph):
            for j in range(pw):
                acc = np.zeros(x.shape[1])
                for iy in range(gh):
                    for ix in range(gw):
                        acc += bilinear(x[batch[r]], y1 + i * bh + (iy + 0.5) * bh / gh,
                                        x1 + j * bw + (ix + 0.5) * bw / gw)
                out[r, :, i, j] = acc / max(gh * gw, 1)
    return out


X = R.standard_normal((2, 2, 5, 6))
BOXES = np.array([[0.5, 1.0, 4.0, 4.5], [1.0, 0.25, 5.75, 3.0], [-1.5, 2.0, 2.5, 6.5]],
                 "float32")       # the last one reaches outside the map
NUM = np.array([1, 2], "int32")
BIG = np.array([[-4.0, -3.0, 9.0, 8.0], [1.0, 1.0, 1.25, 1.5]], "float32")  # beyond; tiny
CASES = [
    ("aligned_adaptive", lambda x, b, n: roi_align(x, b, n, 2), [X, BOXES, NUM],
     lambda x, b, n: ref_roi_align(x, b, n, 2, 2)),
    ("legacy_ratio2_scale", lambda x, b, n: roi_align(x, b, n, (2, 3), spatial_scale=0.5,
                                                      sampling_ratio=2, aligned=False),
     [X, BOXES * 2, NUM], lambda x, b, n: ref_roi_align(x, b, n, 2, 3, 0.5, 2, False)),
    ("big_and_tiny_boxes", lambda x, b, n: roi_align(x, b, n, 2, aligned=False),
     [X[:1], BIG, np.array([2], "int32")],
     lambda x, b, n: ref_roi_align(x, b, n, 2, 2, aligned=False)),
    ("layer_float32", lambda x, b, n: RoIAlign((3, 2), 1.0)(x, b, n),
     [X.astype("float32"), BOXES, NUM], lambda x, b, n: ref_roi_align(x, b, n, 3, 2)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_roi_align(case):
    name, fn, arrays, ref = case
    rtol = 1e-5 if arrays[0].dtype == np.float32 else 1e-6
    check(fn, arrays, ref, rtol=rtol)


def test_roi_align_second_order_and_bad_input():
    x = d2s.to_tensor(X, stop_gradient=False)
    b, n = d2s.to_tensor(BOXES), d2s.to_tensor(NUM)
    (g,) = d2s.grad(d2s.sum(roi_align(x, b, n, 2) ** 2), [x], create_graph=True)
    d2s.sum(g * g).backward()   # the gradient op's own gradient (roi_align again)
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()
    with pytest.raises(ValueError, match="boxes_num"):
        roi_align(x, b, None, 2)
    with pytest.raises(ValueError, match="sums to"):
        roi_align(x, b, d2s.to_tensor(np.array([1, 1], "int32")), 2)
