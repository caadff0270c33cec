"""XLA rule of `yolo_loss_targets` (`d2s/core/ops/yolo_ops.py`): the same
assignment vectorized in jax.numpy; the objectness writes run box by box in
order (B is static), so a later box wins a shared cell as in the kernel."""
from __future__ import annotations

import numpy as np

from ....core.registry import lowers


def _iou_xywh(jnp, a, b):
    a_lo, a_hi = a[..., :2] - a[..., 2:] / 2, a[..., :2] + a[..., 2:] / 2
    b_lo, b_hi = b[..., :2] - b[..., 2:] / 2, b[..., :2] + b[..., 2:] / 2
    lo = jnp.maximum(a_lo[..., :, None, :], b_lo[..., None, :, :])
    hi = jnp.minimum(a_hi[..., :, None, :], b_hi[..., None, :, :])
    inter = jnp.prod(jnp.clip(hi - lo, 0.0, 1.0), axis=-1)
    area_a = jnp.prod(a_hi - a_lo, axis=-1)
    area_b = jnp.prod(b_hi - b_lo, axis=-1)
    return inter / (area_a[..., :, None] + area_b[..., None, :] - inter)


@lowers("xla", "yolo_loss_targets")
def _yolo_loss_targets(ns, x, gt_box, gt_label, gt_score, anchors, anchor_mask, class_num,
                       ignore_thresh, downsample_ratio, use_label_smooth, scale_x_y):
    jnp = ns.jnp
    n, _, h, w = x.shape
    b = gt_box.shape[1]
    mask_num, per = len(anchor_mask), 5 + class_num
    dt = x.dtype
    input_size = downsample_ratio * h
    v = x.astype(np.float64).reshape(n, mask_num, per, h, w)
    sig = 1.0 / (1.0 + jnp.exp(-v[:, :, :2]))
    bias = -0.5 * (scale_x_y - 1.0)
    gx = (jnp.arange(w)[None, None, None, :] + sig[:, :, 0] * scale_x_y + bias) / w
    gy = (jnp.arange(h)[None, None, :, None] + sig[:, :, 1] * scale_x_y + bias) / h
    aw = np.array([anchors[2 * m] for m in anchor_mask], np.float64) / input_size
    ah = np.array([anchors[2 * m + 1] for m in anchor_mask], np.float64) / input_size
    pw = jnp.exp(v[:, :, 2]) * aw[None, :, None, None]
    ph = jnp.exp(v[:, :, 3]) * ah[None, :, None, None]
    pred = jnp.stack([gx, gy, pw, ph], axis=-1).reshape(n, -1, 4)
    gt = gt_box.astype(np.float64)
    best = jnp.max(_iou_xywh(jnp, pred, gt), axis=-1)
    objness = jnp.where(best > ignore_thresh, -1.0, 0.0)

    all_anchors = np.array(anchors, np.float64).reshape(-1, 2) / input_size
    anchor_boxes = np.concatenate([np.zeros_like(all_anchors), all_anchors], axis=-1)
    shifted = jnp.concatenate([jnp.zeros_like(gt[..., :2]), gt[..., 2:]], axis=-1)
    matches = jnp.argmax(_iou_xywh(jnp, shifted, jnp.asarray(anchor_boxes)[None]), axis=-1)
    table = np.full(len(all_anchors), -1, np.int64)
    for k, m in enumerate(anchor_mask):
        table[m] = k
    k = jnp.asarray(table)[matches]
    valid = (jnp.sum(gt[..., 2:], axis=-1) != 0) & (k >= 0)
    ks = jnp.where(valid, k, 0)
    gi = jnp.floor(gt[..., 0] * w).astype(np.int64)
    gj = jnp.floor(gt[..., 1] * h).astype(np.int64)
    cell = jnp.where(valid, (ks * h + gj) * w + gi, 0)
    kw = jnp.asarray([anchors[2 * m] for m in anchor_mask], np.float64)[ks]
    kh = jnp.asarray([anchors[2 * m + 1] for m in anchor_mask], np.float64)[ks]
    safe_w = jnp.where(valid, gt[..., 2], 1.0)
    safe_h = jnp.where(valid, gt[..., 3], 1.0)
    tbox = jnp.stack([gt[..., 0] * w - gi, gt[..., 1] * h - gj,
                      jnp.log(safe_w * input_size / kw), jnp.log(safe_h * input_size / kh)], -1)
    tbox = jnp.where(valid[..., None], tbox, 0.0)
    score = gt_score.astype(np.float64)
    weight = jnp.where(valid, (2.0 - gt[..., 2] * gt[..., 3]) * score, 0.0)
    smooth = min(1.0 / class_num, 1.0 / 40)
    pos, neg = (1.0 - smooth, smooth) if use_label_smooth else (1.0, 0.0)
    hot = gt_label.astype(np.int64)[..., None] == jnp.arange(class_num)
    tclass = jnp.where(hot & valid[..., None], pos, neg)
    rows = jnp.arange(n)
    for j in range(b):
        cj = cell[:, j]
        objness = objness.at[rows, cj].set(jnp.where(valid[:, j], score[:, j],
                                                     objness[rows, cj]))
    return (cell.astype(np.int64), valid.astype(dt), tbox.astype(dt), weight.astype(dt),
            tclass.astype(dt), objness.astype(dt))
