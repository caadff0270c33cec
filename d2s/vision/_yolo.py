"""`yolo_box` / `yolo_loss` of `d2s.vision.ops` (Paddle's): `yolo_box` gives YOLOv3
detection boxes and scores decoded from a head's output, written with
tensor ops (sigmoid, exp, reshapes, selects), so it runs eagerly, converted
on every backend and exported to ONNX like any composition.

For anchor `a` at grid cell (row `i`, column `j`) of an H x W grid:
`cx = (j + sigmoid(tx) * s - (s - 1) / 2) / W`, `cy` likewise over H (`s` is
`scale_x_y`); `w = exp(tw) * anchor_w / (downsample_ratio * W)`, `h` likewise;
the box's corners are scaled by the image's width and height (`img_size`
holds (height, width) per image) and, with `clip_bbox`, clipped to
[0, size - 1]. The confidence is `sigmoid(conf)` (with `iou_aware`:
`sigmoid(conf) ** (1 - f) * sigmoid(iou) ** f`); below `conf_thresh` it is
0 and the box all zeros; scores are `sigmoid(class logits) * confidence`.
Boxes are ordered anchor, row, column.
"""
from __future__ import annotations

import numpy as np

from ..core.dispatch import bind
from ..core.ops import (abs, cast, concat, exp, maximum, minimum, ones_like, reshape, sigmoid,
                        softplus, sum, take_along_axis, transpose, unsqueeze, where)
from ..core.ops._base import constant, lift

__all__ = ["yolo_box", "yolo_loss"]


def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox=True,
             name=None, scale_x_y=1.0, iou_aware=False, iou_aware_factor=0.5):
    """(boxes [N, M, 4] as x1, y1, x2, y2; scores [N, M, class_num]), M = anchors * H * W."""
    x, img_size = lift(x), lift(img_size)
    anchors = [int(a) for a in anchors]
    if len(anchors) % 2 or not anchors:
        raise ValueError(f"yolo_box: anchors must be (width, height) pairs, got {anchors}")
    an = len(anchors) // 2
    if len(x.shape) != 4:
        raise ValueError(f"yolo_box: x must be 4-D [N, C, H, W], got {list(x.shape)}")
    per = 5 + int(class_num)
    c, h, w = x.shape[1:]
    want = an * (per + (1 if iou_aware else 0))
    if c is not None and c != want:
        raise ValueError(f"yolo_box: x has {c} channels; {an} anchors and class_num="
                         f"{class_num} need {want}" + (" (iou_aware)" if iou_aware else ""))
    if h is None or w is None:
        raise ValueError(f"yolo_box: the grid size (H, W) must be known, got {list(x.shape)}")
    dt = np.dtype(x.dtype)
    if iou_aware:
        iou = x[:, :an]                               # [N, an, H, W]
        x = x[:, an:]
    v = transpose(reshape(x, [-1, an, per, h, w]), [0, 1, 3, 4, 2])  # [N, an, H, W, per]
    grid_x = constant(np.tile(np.arange(w, dtype=dt), (h, 1)))
    grid_y = constant(np.tile(np.arange(h, dtype=dt)[:, None], (1, w)))
    bias = -0.5 * (scale_x_y - 1.0)
    cx = (grid_x + sigmoid(v[..., 0]) * scale_x_y + bias) / float(w)
    cy = (grid_y + sigmoid(v[..., 1]) * scale_x_y + bias) / float(h)
    aw = constant(np.array(anchors[0::2], dt).reshape(1, an, 1, 1) / (downsample_ratio * w))
    ah = constant(np.array(anchors[1::2], dt).reshape(1, an, 1, 1) / (downsample_ratio * h))
    bw = exp(v[..., 2]) * aw
    bh = exp(v[..., 3]) * ah
    conf = sigmoid(v[..., 4])
    if iou_aware:
        conf = conf ** (1.0 - iou_aware_factor) * sigmoid(iou) ** iou_aware_factor
    keep = conf >= conf_thresh
    zero = conf * 0.0
    conf = where(keep, conf, zero)
    size = cast(img_size, dt)
    img_h = reshape(size[:, 0], [-1, 1])
    img_w = reshape(size[:, 1], [-1, 1])

    def flat(t):  # [N, an, H, W] -> [N, an * H * W]
        return reshape(t, [-1, an * h * w])
    live = flat(cast(conf > 0.0, dt))  # boxes of a zero confidence are all zeros
    x1 = flat(cx - bw / 2.0) * live * img_w
    y1 = flat(cy - bh / 2.0) * live * img_h
    x2 = flat(cx + bw / 2.0) * live * img_w
    y2 = flat(cy + bh / 2.0) * live * img_h
    if clip_bbox:
        x1, y1 = maximum(x1, x1 * 0.0), maximum(y1, y1 * 0.0)
        x2, y2 = minimum(x2, img_w - 1.0), minimum(y2, img_h - 1.0)
    boxes = concat([unsqueeze(t, -1) for t in (x1, y1, x2, y2)], axis=-1)
    scores = sigmoid(v[..., 5:]) * unsqueeze(conf, -1)   # [N, an, H, W, class_num]
    return boxes, reshape(scores, [-1, an * h * w, int(class_num)])


def _sce(logit, target):
    """Sigmoid cross-entropy with a soft target: softplus(x) - t x (stable)."""
    return softplus(logit) - target * logit


def yolo_loss(x, gt_box, gt_label, anchors, anchor_mask, class_num, ignore_thresh,
              downsample_ratio, gt_score=None, use_label_smooth=True, name=None, scale_x_y=1.0):
    """YOLOv3's loss per image ([N]), Paddle's rule: for every ground-truth box
    matched to an anchor of `anchor_mask`, sigmoid cross-entropy on the
    center offsets and L1 on the log size ratios (weighted by `(2 - w h) *
    gt_score`) and sigmoid cross-entropy on the classes (`gt_score`-weighted,
    smoothed targets with `use_label_smooth`); objectness cross-entropy
    against 1 (weighted by the score) where a box is assigned, 0 elsewhere,
    and no loss where a prediction overlaps some box above `ignore_thresh`.
    The assignment is the `yolo_loss_targets` op; the loss is built from
    differentiable ops on `x`. `gt_box` holds normalized (center x, center
    y, width, height) rows; an all-zero size marks padding."""
    x, gt_box, gt_label = lift(x), lift(gt_box), lift(gt_label)
    anchors, anchor_mask = [int(a) for a in anchors], [int(m) for m in anchor_mask]
    if len(anchors) % 2 or not anchor_mask or max(anchor_mask) >= len(anchors) // 2:
        raise ValueError(f"yolo_loss: anchors must be (w, h) pairs and anchor_mask index "
                         f"them, got {anchors} and {anchor_mask}")
    class_num = int(class_num)
    mask_num, per = len(anchor_mask), 5 + class_num
    if len(x.shape) != 4 or (x.shape[1] is not None and x.shape[1] != mask_num * per):
        raise ValueError(f"yolo_loss: x must be [N, {mask_num * per}, H, W] for "
                         f"{mask_num} anchors and class_num={class_num}, got {list(x.shape)}")
    h, w = x.shape[2:]
    if h is None or w is None:
        raise ValueError(f"yolo_loss: the grid size (H, W) must be known, got {list(x.shape)}")
    if gt_score is None:
        gt_score = ones_like(gt_box[:, :, 0])
    gt_score = cast(lift(gt_score), np.dtype(x.dtype))
    cell, valid, tbox, weight, tclass, objness = bind(
        "yolo_loss_targets", x, gt_box, gt_label, gt_score, anchors=tuple(anchors),
        anchor_mask=tuple(anchor_mask), class_num=class_num, ignore_thresh=float(ignore_thresh),
        downsample_ratio=int(downsample_ratio), use_label_smooth=bool(use_label_smooth),
        scale_x_y=float(scale_x_y))
    preds = reshape(transpose(reshape(x, [-1, mask_num, per, h * w]), [0, 1, 3, 2]),
                    [-1, mask_num * h * w, per])                        # [N, M*H*W, per]
    index = unsqueeze(cell, -1) + constant(np.zeros(per, np.int64))      # [N, B, per]
    picked = take_along_axis(preds, index, axis=1)                      # each box's prediction
    box = (_sce(picked[..., 0], tbox[..., 0]) + _sce(picked[..., 1], tbox[..., 1])
           + abs(picked[..., 2] - tbox[..., 2]) + abs(picked[..., 3] - tbox[..., 3]))
    cls = sum(_sce(picked[..., 5:], tclass), axis=-1) * gt_score
    per_box = (box * weight + cls) * valid                               # [N, B]
    obj = preds[..., 4]                                                  # [N, M*H*W]
    zero = obj * 0.0
    obj_loss = (where(objness > 0.0, _sce(obj, 1.0) * objness, zero)
                + where(objness == 0.0, _sce(obj, 0.0), zero))
    return sum(per_box, axis=1) + sum(obj_loss, axis=1)
