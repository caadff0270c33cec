"""`matrix_nms` (Paddle's `paddle.vision.ops.matrix_nms`, SOLOv2's Matrix NMS)
as a composition of fixed-shape tensor ops, so the decision compiles on
every backend; only the last step, picking the kept rows out of the padded
[N, C * K] table with a bool index, has a data-dependent length (as `nms`:
on xla that step runs on numpy after the backend's warning).

Per image and per class (the background class skipped): the candidates are
the boxes scoring above `score_threshold`, best first, at most `nms_top_k`.
Candidate i's score is decayed by the smallest, over the better candidates
j, of `f(iou(i, j), iou_max(j))`, with `iou_max(j)` the largest IoU of j
with a candidate better than j and `f` = `(1 - iou) / (1 - iou_max)`
(linear) or `exp((iou_max**2 - iou**2) * gaussian_sigma)` (gaussian; Paddle
multiplies by sigma), never above 1. Candidates whose decayed score stays
above `post_threshold` are kept; an image keeps its `keep_top_k` best over
all classes. IoU is Paddle's: boxes that do not touch overlap 0, and with
`normalized=False` widths and heights count both edge pixels (+1).
"""
from __future__ import annotations

import numpy as np

from ..core.ops import (arange, argsort, cast, concat, detach, exp, gather, getitem, maximum,
                        minimum, reshape, sum as _sum, take_along_axis, unsqueeze, where)
from ..core.ops import max as _max, min as _min
from ..core.ops._base import constant, lift
from ..core.ops.search import _dim

__all__ = ["matrix_nms"]


def pairwise_iou(a, b, normalized):
    """Paddle's JaccardOverlap of every box of `a` [..., K, 4] with every box
    of `b` [..., L, 4] -> [..., K, L]."""
    norm = 0.0 if normalized else 1.0
    ax1, ay1, ax2, ay2 = (unsqueeze(a[..., k], -1) for k in range(4))
    bx1, by1, bx2, by2 = (unsqueeze(b[..., k], -2) for k in range(4))

    def area(x1, y1, x2, y2):
        bad = (x2 < x1) | (y2 < y1)
        full = (x2 - x1 + norm) * (y2 - y1 + norm)
        return where(bad, full * 0.0, full)
    apart = (bx1 > ax2) | (bx2 < ax1) | (by1 > ay2) | (by2 < ay1)
    inter = ((minimum(ax2, bx2) - maximum(ax1, bx1) + norm)
             * (minimum(ay2, by2) - maximum(ay1, by1) + norm))
    union = area(ax1, ay1, ax2, ay2) + area(bx1, by1, bx2, by2) - inter
    zero = inter * 0.0
    safe = where(apart | (union == 0.0), zero + 1.0, union)
    return where(apart, zero, inter / safe)


def matrix_nms(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k,
               use_gaussian=False, gaussian_sigma=2.0, background_label=0, normalized=True,
               return_index=False, return_rois_num=True, name=None):
    """Matrix NMS of `bboxes` [N, M, 4] (x1, y1, x2, y2) with `scores`
    [N, C, M] -> (out [No, 6] rows of (label, decayed score, x1, y1, x2, y2),
    per image best first; rois_num [N] int32 or None; index [No, 1] int32,
    the kept boxes' indices counted across the batch (n * M + m), or None),
    in Paddle's order of results. Not differentiable (Paddle's outputs stop
    gradients too)."""
    bboxes, scores = lift(bboxes), lift(scores)
    if len(bboxes.shape) != 3 or bboxes.shape[2] not in (4, None):
        raise ValueError(f"matrix_nms: bboxes must be [N, M, 4], got {list(bboxes.shape)}")
    if len(scores.shape) != 3:
        raise ValueError(f"matrix_nms: scores must be [N, C, M], got {list(scores.shape)}")
    for what, t in (("bboxes", bboxes), ("scores", scores)):
        if np.dtype(t.dtype).kind != "f":
            raise TypeError(f"matrix_nms: {what} must be float32 or float64, got {t.dtype}")
    if np.dtype(scores.dtype) != np.dtype(bboxes.dtype):
        scores = cast(scores, bboxes.dtype)
    nms_top_k, keep_top_k = int(nms_top_k), int(keep_top_k)
    bboxes, scores = detach(bboxes), detach(scores)
    m = _dim(bboxes, 1)
    order = argsort(scores, axis=2, descending=True, stable=True)       # [N, C, M]
    if nms_top_k > -1:
        order = order[:, :, :nms_top_k]                                 # [N, C, K]
    s = take_along_axis(scores, order, axis=2)
    cand = s > float(score_threshold)             # a prefix of each row: s is sorted
    image = unsqueeze(unsqueeze(arange(_dim(bboxes, 0)), 1), 2)         # [N, 1, 1]
    flat = order + image * m                                            # into [N * M]
    k = _dim(order, 2)
    b = reshape(gather(reshape(bboxes, [-1, 4]), reshape(flat, [-1])), [-1, _dim(s, 1), k, 4])
    iou = pairwise_iou(b, b, normalized)                                # [N, C, K, K]
    r = arange(k)
    earlier = unsqueeze(r, 0) < unsqueeze(r, 1)                         # [i, j]: j before i
    better = earlier & unsqueeze(cand, -2)                              # j a candidate
    zero = iou * 0.0
    iou_max = _max(where(better, iou, zero), axis=-1)                   # [N, C, K]
    top = unsqueeze(iou_max, -2)                                        # iou_max of column j
    if use_gaussian:
        decay = exp((top * top - iou * iou) * float(gaussian_sigma))
    else:
        den = 1.0 - top
        decay = where(den > 0.0, (1.0 - iou) / where(den > 0.0, den, zero + 1.0), zero + 1.0)
    decay = minimum(_min(where(better, decay, zero + 1.0), axis=-1), s * 0.0 + 1.0)
    ds = s * decay                                                      # [N, C, K]
    kept = cand & (ds > float(post_threshold))
    classes = arange(_dim(s, 1))
    if background_label > -1:
        kept = kept & unsqueeze(unsqueeze(classes != int(background_label), 0), 2)
    label = cast(unsqueeze(unsqueeze(classes, 0), 2) + order * 0, bboxes.dtype)
    # every (class, rank) candidate of an image in one row, best decayed score first
    rows = concat([unsqueeze(label, -1), unsqueeze(ds, -1), b], axis=-1)  # [N, C, K, 6]
    rows = reshape(rows, [_dim(bboxes, 0), -1, 6])
    kept, ds, flat = (reshape(t, [_dim(bboxes, 0), -1]) for t in (kept, ds, flat))
    rank = argsort(where(kept, ds, ds * 0.0 - np.inf), axis=1, descending=True, stable=True)
    kept = take_along_axis(kept, rank, axis=1)
    if keep_top_k > -1:
        kept = kept & (unsqueeze(arange(_dim(rank, 1)), 0) < keep_top_k)
    rows = take_along_axis(rows, unsqueeze(rank, -1) + constant(np.zeros(6, np.int64)), axis=1)
    flat = take_along_axis(flat, rank, axis=1)
    pick = reshape(kept, [-1])
    out = getitem(reshape(rows, [-1, 6]), pick)
    index = reshape(cast(getitem(reshape(flat, [-1]), pick), "int32"), [-1, 1])
    rois_num = cast(_sum(cast(kept, "int32"), axis=1), "int32")
    return (out, rois_num if return_rois_num else None, index if return_index else None)
