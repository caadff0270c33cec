"""`yolo_loss_targets`: what YOLOv3's loss compares a head's output with
(Paddle's `yolo_loss` rule), as one op because it matches ground-truth
boxes to anchors and grid cells, a data-dependent assignment.

From `x` [N, mask_num * (5 + class_num), H, W] and the ground truth
(`gt_box` [N, B, 4] as normalized center x, y, width, height; `gt_label`
[N, B]; `gt_score` [N, B]) it gives, per ground-truth box: the flat index
of its anchor and cell (`cell`, in anchor, row, column order), whether it
takes part (`valid`: a nonzero size and a best anchor among `anchor_mask`),
the targets (tx, ty, tw, th), the box-loss weight `(2 - w h) * score` and
the class targets (smoothed with `use_label_smooth`); and per prediction
the objectness target: -1 where the predicted box overlaps some
ground-truth box by more than `ignore_thresh` (no loss), the matched box's
score where one is assigned (later boxes win), else 0.

None of these depend differentiably on `x` (the overlap only selects), so
the op has no gradient; `d2s.vision.ops.yolo_loss` computes the loss from
them with differentiable tensor ops.
"""
from __future__ import annotations

import numpy as np

from ..registry import Aval, register_op


def _iou_xywh(a, b):
    """IoU of boxes a [..., P, 4] and b [..., Q, 4] (center x, y, w, h) -> [..., P, Q];
    the intersection sides clipped to [0, 1] as Paddle's rule has it."""
    a_lo, a_hi = a[..., :2] - a[..., 2:] / 2, a[..., :2] + a[..., 2:] / 2
    b_lo, b_hi = b[..., :2] - b[..., 2:] / 2, b[..., :2] + b[..., 2:] / 2
    lo = np.maximum(a_lo[..., :, None, :], b_lo[..., None, :, :])
    hi = np.minimum(a_hi[..., :, None, :], b_hi[..., None, :, :])
    inter = np.prod(np.clip(hi - lo, 0.0, 1.0), axis=-1)
    area_a = np.prod(a_hi - a_lo, axis=-1)
    area_b = np.prod(b_hi - b_lo, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return inter / (area_a[..., :, None] + area_b[..., None, :] - inter)


def _targets_kernel(x, gt_box, gt_label, gt_score, anchors, anchor_mask, class_num,
                    ignore_thresh, downsample_ratio, use_label_smooth, scale_x_y):
    n, _, h, w = x.shape
    mask_num = len(anchor_mask)
    per = 5 + class_num
    b = gt_box.shape[1]
    dt = np.dtype(x.dtype)
    input_size = downsample_ratio * h
    v = x.astype(np.float64).reshape(n, mask_num, per, h, w)
    sig = 1.0 / (1.0 + np.exp(-v[:, :, :2]))
    bias = -0.5 * (scale_x_y - 1.0)
    gx = (np.arange(w)[None, None, None, :] + sig[:, :, 0] * scale_x_y + bias) / w
    gy = (np.arange(h)[None, None, :, None] + sig[:, :, 1] * scale_x_y + bias) / h
    aw = np.array([anchors[2 * m] for m in anchor_mask], np.float64) / input_size
    ah = np.array([anchors[2 * m + 1] for m in anchor_mask], np.float64) / input_size
    pw = np.exp(v[:, :, 2]) * aw[None, :, None, None]
    ph = np.exp(v[:, :, 3]) * ah[None, :, None, None]
    pred = np.stack([gx, gy, pw, ph], axis=-1).reshape(n, -1, 4)
    gt = gt_box.astype(np.float64)
    best = np.max(_iou_xywh(pred, gt), axis=-1)           # [N, M*H*W]
    objness = np.where(best > ignore_thresh, -1.0, 0.0)

    all_anchors = np.array(anchors, np.float64).reshape(-1, 2) / input_size
    shifted = np.concatenate([np.zeros_like(gt[..., :2]), gt[..., 2:]], axis=-1)
    anchor_boxes = np.concatenate([np.zeros_like(all_anchors), all_anchors], axis=-1)
    matches = np.argmax(_iou_xywh(shifted, np.broadcast_to(anchor_boxes,
                                                           (n,) + anchor_boxes.shape)), -1)
    smooth = min(1.0 / class_num, 1.0 / 40)
    pos, neg = (1.0 - smooth, smooth) if use_label_smooth else (1.0, 0.0)
    cell = np.zeros((n, b), np.int64)
    valid = np.zeros((n, b), dt)
    tbox = np.zeros((n, b, 4), dt)
    weight = np.zeros((n, b), dt)
    tclass = np.full((n, b, class_num), neg, dt)
    for i in range(n):
        for j in range(b):
            if gt[i, j, 2:].sum() == 0 or int(matches[i, j]) not in anchor_mask:
                continue
            k = anchor_mask.index(int(matches[i, j]))
            gi, gj = int(gt[i, j, 0] * w), int(gt[i, j, 1] * h)
            cell[i, j] = (k * h + gj) * w + gi
            valid[i, j] = 1.0
            tbox[i, j] = (gt[i, j, 0] * w - gi, gt[i, j, 1] * h - gj,
                          np.log(gt[i, j, 2] * input_size / anchors[2 * anchor_mask[k]]),
                          np.log(gt[i, j, 3] * input_size / anchors[2 * anchor_mask[k] + 1]))
            weight[i, j] = (2.0 - gt[i, j, 2] * gt[i, j, 3]) * gt_score[i, j]
            tclass[i, j, int(gt_label[i, j])] = pos
            objness[i, cell[i, j]] = gt_score[i, j]
    return cell, valid, tbox, weight, tclass, objness.astype(dt)


def _targets_infer(x, gt_box, gt_label, gt_score, anchors, anchor_mask, class_num, **_):
    if len(x.shape) != 4 or len(gt_box.shape) != 3 or tuple(gt_box.shape[2:]) != (4,):
        raise ValueError(f"yolo_loss: x must be [N, C, H, W] and gt_box [N, B, 4], got "
                         f"{list(x.shape)} and {list(gt_box.shape)}")
    n, b = x.shape[0], gt_box.shape[1]
    mask_num = len(anchor_mask)
    h, w = x.shape[2:]
    cells = None if h is None or w is None else mask_num * h * w
    dt = np.dtype(x.dtype)
    return (Aval((n, b), np.dtype(np.int64)), Aval((n, b), dt), Aval((n, b, 4), dt),
            Aval((n, b), dt), Aval((n, b, int(class_num)), dt), Aval((n, cells), dt))


register_op("yolo_loss_targets", _targets_kernel, _targets_infer, num_outputs=6)
