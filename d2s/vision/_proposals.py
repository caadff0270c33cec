"""Region proposals of two-stage detectors (Faster / Mask R-CNN with FPN):
Paddle's `generate_proposals` (the RPN's boxes) and
`distribute_fpn_proposals` (each RoI to its pyramid level).

Both are fixed-shape tensor programs up to their last step: every image's
candidates are scored, decoded, filtered and suppressed in a padded
[N, K] table (the suppression is the `proposal_nms_keep` op, whose xla
rule compiles), and only picking the kept rows out with a bool index has a
data-dependent length, as `nms` (on xla that step runs on numpy after the
backend's warning). Paddle's outputs stop gradients; so do these.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.dispatch import bind
from ..core.ops import (arange, argsort, cast, concat, cumsum, detach, exp, floor, gather, getitem,
                        log2, maximum, minimum, reshape, sqrt, stack, sum as _sum,
                        take_along_axis, transpose, unsqueeze, where)
from ..core.ops._base import constant, lift
from ..core.ops.search import _dim
from ._detection import _batch_of

__all__ = ["generate_proposals", "distribute_fpn_proposals"]

_BBOX_CLIP = math.log(1000.0 / 16.0)   # Paddle's cap on the log size deltas


def _float(t, what, fn):
    t = lift(t)
    if np.dtype(t.dtype).kind != "f":
        raise TypeError(f"{fn}: {what} must be float32 or float64, got {t.dtype}")
    return detach(t)


def generate_proposals(scores, bbox_deltas, img_size, anchors, variances, pre_nms_top_n=6000,
                       post_nms_top_n=1000, nms_thresh=0.5, min_size=0.1, eta=1.0,
                       pixel_offset=False, return_rois_num=False, name=None):
    """RPN proposals per image, Paddle's rule: `scores` [N, A, H, W] and
    `bbox_deltas` [N, 4A, H, W] are read in (row, column, anchor) order to
    match `anchors` / `variances` ([H, W, A, 4]); the `pre_nms_top_n` best
    (all when <= 0) are decoded against their anchors (center-size, the
    variances scaling the deltas, the log sizes capped at log(1000/16)),
    clipped to the image (`img_size` [N, 2] holds height, width), and those
    narrower or lower than max(min_size, 1) dropped (with `pixel_offset`
    sizes count both edge pixels and the box center must lie in the image);
    greedy NMS at `nms_thresh` (adaptive with `eta` < 1; skipped when
    `nms_thresh` <= 0) keeps the `post_nms_top_n` best. An image with no box
    left gives one all-zero box of score 0. -> (rois [R, 4], roi_probs
    [R, 1], rois_num [N] int32 when `return_rois_num`, else None), rois
    grouped by image, best first. (Paddle leaves the order of equal scores
    unspecified; here the earlier anchor comes first.)"""
    fn = "generate_proposals"
    scores = _float(scores, "scores", fn)
    deltas = _float(bbox_deltas, "bbox_deltas", fn)
    if len(scores.shape) != 4 or len(deltas.shape) != 4:
        raise ValueError(f"{fn}: scores must be [N, A, H, W] and bbox_deltas [N, 4A, H, W], got "
                         f"{list(scores.shape)} and {list(deltas.shape)}")
    a_num, d_num = scores.shape[1], deltas.shape[1]
    if a_num is not None and d_num is not None and d_num != 4 * a_num:
        raise ValueError(f"{fn}: bbox_deltas has {d_num} channels; {a_num} anchors need "
                         f"{4 * a_num}")
    dt = np.dtype(scores.dtype)
    deltas, anchors, variances = (cast(detach(lift(t)), dt)
                                  for t in (deltas, anchors, variances))
    size = cast(detach(lift(img_size)), dt)
    if len(size.shape) != 2 or size.shape[1] not in (2, None):
        raise ValueError(f"{fn}: img_size must be [N, 2] (height, width), got {list(size.shape)}")
    n = _dim(scores, 0)
    s = reshape(transpose(scores, [0, 2, 3, 1]), [n, -1])              # [N, M]
    d = reshape(transpose(deltas, [0, 2, 3, 1]), [n, -1, 4])           # [N, M, 4]
    order = argsort(s, axis=1, descending=True, stable=True)
    if int(pre_nms_top_n) > 0:
        order = order[:, :int(pre_nms_top_n)]                           # [N, K]
    s = take_along_axis(s, order, axis=1)
    d = take_along_axis(d, unsqueeze(order, -1) + constant(np.zeros(4, np.int64)), axis=1)
    k = _dim(order, 1)
    flat = reshape(order, [-1])
    anc = reshape(gather(reshape(anchors, [-1, 4]), flat), [n, k, 4])
    var = reshape(gather(reshape(variances, [-1, 4]), flat), [n, k, 4])
    off = 1.0 if pixel_offset else 0.0
    aw = anc[..., 2] - anc[..., 0] + off
    ah = anc[..., 3] - anc[..., 1] + off
    cx = var[..., 0] * d[..., 0] * aw + (anc[..., 0] + 0.5 * aw)
    cy = var[..., 1] * d[..., 1] * ah + (anc[..., 1] + 0.5 * ah)
    bw = exp(minimum(var[..., 2] * d[..., 2], aw * 0.0 + _BBOX_CLIP)) * aw
    bh = exp(minimum(var[..., 3] * d[..., 3], ah * 0.0 + _BBOX_CLIP)) * ah
    im_h, im_w = size[:, 0:1], size[:, 1:2]                             # [N, 1]

    def clip(v, hi):
        return maximum(minimum(v, hi - off), v * 0.0)
    x1, y1 = clip(cx - bw / 2.0, im_w), clip(cy - bh / 2.0, im_h)
    x2, y2 = clip(cx + bw / 2.0 - off, im_w), clip(cy + bh / 2.0 - off, im_h)
    ws, hs = x2 - x1 + off, y2 - y1 + off
    least = max(float(min_size), 1.0)
    valid = (ws >= least) & (hs >= least)
    if pixel_offset:
        valid = valid & (x1 + ws / 2.0 <= im_w) & (y1 + hs / 2.0 <= im_h)
    boxes = stack([x1, y1, x2, y2], axis=-1)                            # [N, K, 4]
    if float(nms_thresh) <= 0:
        keep = valid
    else:
        keep = bind("proposal_nms_keep", boxes, valid, iou_threshold=float(nms_thresh),
                    eta=float(eta), pixel_offset=bool(pixel_offset))
        if int(post_nms_top_n) > 0:
            keep = keep & (cumsum(cast(keep, "int64"), axis=1) <= int(post_nms_top_n))
    # an image left with nothing gets one zero box of score 0 (a last, padding slot)
    empty = _sum(cast(keep, "int64"), axis=1, keepdim=True) == 0        # [N, 1]
    keep = concat([keep, empty], axis=1)
    boxes = concat([boxes, boxes[:, :1] * 0.0], axis=1)
    s = concat([s, s[:, :1] * 0.0], axis=1)
    pick = reshape(keep, [-1])
    rois = getitem(reshape(boxes, [-1, 4]), pick)
    probs = reshape(getitem(reshape(s, [-1]), pick), [-1, 1])
    rois_num = cast(_sum(cast(keep, "int32"), axis=1), "int32") if return_rois_num else None
    return rois, probs, rois_num


def distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale,
                             pixel_offset=False, rois_num=None, name=None):
    """Each RoI of `fpn_rois` [R, 4] goes to pyramid level
    `floor(log2(sqrt(area) / refer_scale + 1e-6) + refer_level)`, clipped to
    [min_level, max_level] (the area counts both edge pixels with
    `pixel_offset`; an inverted box has area 0). -> (multi_rois: one [Rl, 4]
    tensor per level, the RoIs in their given order; restore_ind [R, 1]
    int32: where each RoI went in the levels' concatenation, so
    `concat(multi_rois)[restore_ind[:, 0]]` is `fpn_rois`; rois_num_per_level:
    with `rois_num` (RoIs per image, grouped by image) one [B] int32 tensor
    per level, else None)."""
    fn = "distribute_fpn_proposals"
    rois = _float(fpn_rois, "fpn_rois", fn)
    if len(rois.shape) != 2 or rois.shape[1] not in (4, None):
        raise ValueError(f"{fn}: fpn_rois must be [R, 4], got {list(rois.shape)}")
    min_level, max_level = int(min_level), int(max_level)
    if max_level < min_level:
        raise ValueError(f"{fn}: max_level ({max_level}) must be >= min_level ({min_level})")
    off = 1.0 if pixel_offset else 0.0
    w, h = rois[:, 2] - rois[:, 0], rois[:, 3] - rois[:, 1]
    area = (w + off) * (h + off)
    area = where((w < 0.0) | (h < 0.0), area * 0.0, area)
    level = floor(log2(sqrt(area) / float(refer_scale) + 1e-6) + float(refer_level))
    level = cast(minimum(maximum(level, level * 0.0 + min_level), level * 0.0 + max_level),
                 "int64")
    if rois_num is not None:
        rois_num = lift(rois_num)
        image = _batch_of(rois_num, rois)                               # [R]
        images = unsqueeze(image, 1) == unsqueeze(arange(_dim(rois_num, 0)), 0)   # [R, B]
    multi_rois, per_level, restore = [], [], None
    start = None
    for lvl in range(min_level, max_level + 1):
        here = level == lvl
        multi_rois.append(getitem(rois, here))
        count = cast(here, "int64")
        pos = cumsum(count, axis=0) - 1 + (0 if start is None else start)
        restore = where(here, pos, pos * 0 if restore is None else restore)
        start = _sum(count) if start is None else start + _sum(count)
        if rois_num is not None:
            per_level.append(cast(_sum(cast(unsqueeze(here, 1) & images, "int32"), axis=0),
                                  "int32"))
    restore = reshape(cast(restore, "int32"), [-1, 1])
    return multi_rois, restore, (per_level if rois_num is not None else None)
