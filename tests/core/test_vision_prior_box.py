"""d2s.vision.ops.prior_box (d2s/vision/_detection.py): SSD's prior boxes vs a
loop reference written from Paddle's definition (ratio expansion with
flip and duplicates, max sizes before or after the ratios, steps, offset,
clip), eager and converted on numpy and xla, ONNX Runtime."""
import math

import numpy as np
import pytest

import d2s
from d2s.vision.ops import prior_box
from ops_check import check


def ref_prior_box(fmap, img, min_sizes, max_sizes=(), ratios=(1.0,), var=(0.1, 0.1, 0.2, 0.2),
                  flip=False, clip=False, steps=(0.0, 0.0), offset=0.5, order=False):
    fh, fw = fmap.shape[2:]
    ih, iw = img.shape[2:]
    expanded = [1.0]
    for ar in ratios:
        if all(abs(ar - e) >= 1e-6 for e in expanded):
            expanded += [ar] + ([1.0 / ar] if flip else [])
    sw, sh = steps
    if sw == 0 or sh == 0:
        sw, sh = iw / fw, ih / fh
    out = []
    for h in range(fh):
        for w in range(fw):
            cx, cy = (w + offset) * sw, (h + offset) * sh
            cell = []
            for k, m in enumerate(min_sizes):
                ratio_boxes = [(m * math.sqrt(ar) / 2, m / math.sqrt(ar) / 2) for ar in expanded
                               if not order or abs(ar - 1.0) >= 1e-6]
                big = [(math.sqrt(m * max_sizes[k]) / 2,) * 2] if max_sizes else []
                cell += ([(m / 2, m / 2)] + big + ratio_boxes) if order else ratio_boxes + big
            out.append([[(cx - bw) / iw, (cy - bh) / ih, (cx + bw) / iw, (cy + bh) / ih]
                        for bw, bh in cell])
    boxes = np.array(out).reshape(fh, fw, -1, 4)
    if clip:
        boxes = np.clip(boxes, 0, 1)
    dt = fmap.dtype
    return boxes.astype(dt), np.broadcast_to(np.array(var), boxes.shape).astype(dt)


F = np.zeros((1, 3, 2, 3), "float32")
IMG = np.zeros((1, 3, 16, 20), "float32")
CASES = [
    ("ratios_flip_max", lambda f, i: prior_box(f, i, [4.0, 8.0], [6.0, 12.0], [2.0, 3.0, 2.0],
                                                flip=True),
     lambda f, i: ref_prior_box(f, i, [4.0, 8.0], [6.0, 12.0], [2.0, 3.0, 2.0], flip=True)),
    ("caffe_order_clip_steps", lambda f, i: prior_box(
        f, i, [10.0], [14.0], [2.0], variance=[0.1, 0.2, 0.3, 0.4], clip=True, steps=[6.0, 5.0],
        offset=0.25, min_max_aspect_ratios_order=True),
     lambda f, i: ref_prior_box(f, i, [10.0], [14.0], [2.0], (0.1, 0.2, 0.3, 0.4), clip=True,
                                steps=(6.0, 5.0), offset=0.25, order=True)),
    ("defaults", lambda f, i: prior_box(f, i, [5.0]), lambda f, i: ref_prior_box(f, i, [5.0])),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_prior_box(case):
    name, fn, ref = case
    check(fn, [F, IMG], ref, grad=False, unknown_dims=False)


def test_prior_box_needs_known_sizes():
    from d2s import static
    with static.program_guard(static.Program()):
        f = static.data("f", [None, 3, None, None], "float32")
        with pytest.raises(ValueError, match="map sizes must be known"):
            prior_box(f, d2s.to_tensor(IMG), [4.0])
