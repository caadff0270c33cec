"""d2s.vision.ops.roi_pool / RoIPool (d2s/core/ops/detection_ops.py): values
vs a window-by-window numpy reference written from the definition (corners
rounded half away from zero, both edge pixels counted, windows clipped to
the map, empty ones 0), gradients by finite differences (to each window's
maximum), numpy and xla conversion, unknown dims, ONNX Runtime (MaxRoiPool)."""
import math

import numpy as np
import pytest

from d2s.vision.ops import RoIPool, roi_pool
from ops_check import check

R = np.random.default_rng(4)


def rnd(v):
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def ref_roi_pool(x, boxes, boxes_num, ph, pw, scale=1.0):
    _, c, h, w = x.shape
    batch = np.repeat(np.arange(x.shape[0]), boxes_num)
    out = np.zeros((len(boxes), c, ph, pw), x.dtype)
    for r, box in enumerate(boxes.astype(np.float64)):
        x1, y1, x2, y2 = (rnd(v * scale) for v in box)
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for i in range(ph):
            hs = min(max(math.floor(i * rh / ph) + y1, 0), h)
            he = min(max(math.ceil((i + 1) * rh / ph) + y1, 0), h)
            for j in range(pw):
                ws = min(max(math.floor(j * rw / pw) + x1, 0), w)
                we = min(max(math.ceil((j + 1) * rw / pw) + x1, 0), w)
                if he > hs and we > ws:
                    out[r, :, i, j] = x[batch[r], :, hs:he, ws:we].max(axis=(1, 2))
    return out


X = R.standard_normal((2, 2, 6, 7))
BOXES = np.array([[0.4, 1.0, 4.0, 4.5], [1.0, 0.5, 6.5, 3.0], [-2.0, 2.0, 2.5, 7.5],
                  [9.0, 1.0, 12.0, 3.0]], "float32")   # partly outside; wholly outside
NUM = np.array([2, 2], "int32")
CASES = [
    ("pool_2x2", lambda x, b, n: roi_pool(x, b, n, 2), [X, BOXES, NUM],
     lambda x, b, n: ref_roi_pool(x, b, n, 2, 2)),
    ("pool_3x2_scale", lambda x, b, n: roi_pool(x, b, n, (3, 2), spatial_scale=0.5),
     [X, BOXES * 2, NUM], lambda x, b, n: ref_roi_pool(x, b, n, 3, 2, 0.5)),
    ("layer_float32", lambda x, b, n: RoIPool(2)(x, b, n), [X.astype("float32"), BOXES, NUM],
     lambda x, b, n: ref_roi_pool(x, b, n, 2, 2)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_roi_pool(case):
    name, fn, arrays, ref = case
    check(fn, arrays, ref)
