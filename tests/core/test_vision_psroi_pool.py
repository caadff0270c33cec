"""d2s.vision.ops.psroi_pool / PSRoIPool (d2s/vision/_detection.py, a
composite): values vs a window-by-window reference written from the R-FCN
definition Paddle implements (position-sensitive channels, rounded and
scaled corners, clipped windows, empty bins 0), gradients by finite
differences, numpy and xla conversion, unknown RoI count, ONNX Runtime."""
import math

import numpy as np
import pytest

from d2s.vision.ops import PSRoIPool, psroi_pool
from ops_check import check

R = np.random.default_rng(6)


def rnd(v):
    return math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)


def ref_psroi_pool(x, boxes, boxes_num, ph, pw, scale=1.0):
    _, c, h, w = x.shape
    oc = c // (ph * pw)
    batch = np.repeat(np.arange(x.shape[0]), boxes_num)
    out = np.zeros((len(boxes), oc, ph, pw), x.dtype)
    for r, box in enumerate(boxes.astype(np.float64)):
        x1, y1 = rnd(box[0]) * scale, rnd(box[1]) * scale
        x2, y2 = (rnd(box[2]) + 1) * scale, (rnd(box[3]) + 1) * scale
        bh, bw = max(y2 - y1, 0.1) / ph, max(x2 - x1, 0.1) / pw
        for k in range(oc):
            for i in range(ph):
                hs = min(max(math.floor(bh * i + y1), 0), h)
                he = min(max(math.ceil(bh * (i + 1) + y1), 0), h)
                for j in range(pw):
                    ws = min(max(math.floor(bw * j + x1), 0), w)
                    we = min(max(math.ceil(bw * (j + 1) + x1), 0), w)
                    if he > hs and we > ws:
                        ch = (k * ph + i) * pw + j
                        out[r, k, i, j] = x[batch[r], ch, hs:he, ws:we].mean()
    return out


X = R.standard_normal((2, 8, 5, 6))            # 2 output channels x 2 x 2 bins
BOXES = np.array([[0.4, 1.0, 3.0, 3.5], [1.0, 0.5, 5.5, 3.0], [-2.0, 2.0, 2.5, 6.5],
                  [8.0, 1.0, 9.0, 3.0]], "float32")   # partly outside; wholly outside
NUM = np.array([1, 3], "int32")
CASES = [
    ("pool_2x2", lambda x, b, n: psroi_pool(x, b, n, 2), [X, BOXES, NUM],
     lambda x, b, n: ref_psroi_pool(x, b, n, 2, 2)),
    ("layer_scale_1x2_f32", lambda x, b, n: PSRoIPool((1, 2), 0.5)(x, b, n),
     [X.astype("float32"), BOXES * 2, NUM], lambda x, b, n: ref_psroi_pool(x, b, n, 1, 2, 0.5)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_psroi_pool(case):
    name, fn, arrays, ref = case
    check(fn, arrays, ref, rtol=1e-5 if arrays[0].dtype == np.float32 else 1e-6,
          unknown="first")


def test_psroi_pool_channels_must_split():
    import d2s
    with pytest.raises(ValueError, match="out_channels"):
        psroi_pool(d2s.to_tensor(X[:, :6]), d2s.to_tensor(BOXES), d2s.to_tensor(NUM), 2)
