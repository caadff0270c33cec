"""Detection primitives behind `d2s.vision.ops` (nms, roi_align, roi_pool).

`nms_keep` is greedy non-maximum suppression's decision as a fixed-shape
mask: box i (in the given order) is kept unless an earlier kept box of the
same group overlaps it with IoU > threshold. The mask has the boxes' shape,
so a compiling backend can hold it; picking the kept indices out of it is
the data-dependent step (`nms` does it with a bool index, as `nonzero`).
IoU follows Paddle's kernel: corner boxes, areas without a +1 pixel offset.
"""
from __future__ import annotations

import numpy as np

from ..registry import Aval, register_op


def _nms_keep_kernel(boxes, groups, iou_threshold):
    n = boxes.shape[0]
    x1, y1, x2, y2 = (boxes[:, k] for k in range(4))
    area = (x2 - x1) * (y2 - y1)
    keep = np.zeros(n, np.bool_)
    dead = np.zeros(n, np.bool_)
    with np.errstate(all="ignore"):
        for i in range(n):
            if dead[i]:
                continue
            keep[i] = True
            rest = slice(i + 1, n)
            w = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0)
            h = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0)
            inter = w * h
            iou = inter / (area[i] + area[rest] - inter)
            dead[rest] |= (iou > iou_threshold) & (groups[rest] == groups[i])
    return keep


def _nms_keep_infer(boxes, groups, iou_threshold):
    shape = tuple(boxes.shape)
    if len(shape) != 2 or shape[1] not in (4, None):
        raise ValueError(f"nms: boxes must be [num_boxes, 4], got {list(shape)}")
    if len(groups.shape) != 1:
        raise ValueError(f"nms: category_idxs must be 1-D, got {list(groups.shape)}")
    return Aval((shape[0],), np.dtype(np.bool_))


register_op("nms_keep", _nms_keep_kernel, _nms_keep_infer)
