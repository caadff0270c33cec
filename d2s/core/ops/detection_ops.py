"""Detection primitives behind `d2s.vision.ops` (nms, roi_align, roi_pool,
generate_proposals' NMS).

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


# ---- proposal_nms_keep: generate_proposals' NMS ---------------------------------------------
# Paddle's proposal NMS differs from `nms_keep` in three ways, so it is its
# own op: boxes are batched per image ([N, K, 4], each row in score order,
# `valid` marking the rows that survived the size filter), the IoU is
# Paddle's JaccardOverlap (boxes that do not touch overlap 0; with
# `pixel_offset` sizes count both edge pixels, +1), and the threshold
# adapts: after each kept box, while it is above 0.5 and `eta` < 1, it is
# multiplied by `eta` (so each decision depends on the previous ones).
def proposal_iou(box, others, pixel_offset):
    """Paddle's JaccardOverlap of one box [4] with each of `others` [K, 4]."""
    norm = 1.0 if pixel_offset else 0.0
    x1, y1, x2, y2 = (others[:, k] for k in range(4))
    apart = (x1 > box[2]) | (x2 < box[0]) | (y1 > box[3]) | (y2 < box[1])

    def area(ax1, ay1, ax2, ay2):
        return np.where((ax2 < ax1) | (ay2 < ay1), 0.0, (ax2 - ax1 + norm) * (ay2 - ay1 + norm))
    inter = ((np.minimum(box[2], x2) - np.maximum(box[0], x1) + norm)
             * (np.minimum(box[3], y2) - np.maximum(box[1], y1) + norm))
    with np.errstate(all="ignore"):
        iou = inter / (area(*box) + area(x1, y1, x2, y2) - inter)
    return np.where(apart, 0.0, iou).astype(others.dtype)


def _proposal_nms_keep_kernel(boxes, valid, iou_threshold, eta, pixel_offset):
    n, k = valid.shape
    keep = np.zeros((n, k), np.bool_)
    t = boxes.dtype.type
    for b in range(n):
        thr = t(iou_threshold)
        kept = []
        for i in np.flatnonzero(valid[b]):
            if kept and not np.all(proposal_iou(boxes[b, i], boxes[b, kept], pixel_offset)
                                   <= thr):
                continue
            keep[b, i] = True
            kept.append(i)
            if eta < 1 and thr > 0.5:
                thr = t(thr * t(eta))
    return keep


def _proposal_nms_keep_infer(boxes, valid, iou_threshold, eta, pixel_offset):
    if len(boxes.shape) != 3 or boxes.shape[2] not in (4, None):
        raise ValueError(f"generate_proposals: boxes must be [N, K, 4], got {list(boxes.shape)}")
    if len(valid.shape) != 2:
        raise ValueError(f"generate_proposals: valid must be [N, K], got {list(valid.shape)}")
    return Aval(tuple(valid.shape), np.dtype(np.bool_))


register_op("proposal_nms_keep", _proposal_nms_keep_kernel, _proposal_nms_keep_infer)


# ---- roi_align ----------------------------------------------------------------------------
# Each output bin averages bilinear samples on a regular grid inside it. The
# bilinear weight of a sample factorizes over y and x (and so does its
# validity: a sample beyond one pixel outside the map weighs 0), so a RoI's
# output is `Ay @ x[b, c] @ Ax.T / count` with `Ay` [ph, H] and `Ax` [pw, W]
# the summed sample weights per row and column: one pair of small matrix
# products per RoI, and the gradient is the transposed products.
def roi_batch_index(boxes_num, rois):
    """Image index of each RoI: RoIs come grouped by image, boxes_num[i] of image i."""
    ends = np.cumsum(np.asarray(boxes_num, np.int64))
    if ends.size and ends[-1] != rois:
        raise ValueError(f"roi_align/roi_pool: boxes_num sums to {int(ends[-1])} but there are "
                         f"{rois} boxes")
    return np.searchsorted(ends, np.arange(rois), side="right")


def _axis_weights(start, size, pooled, grid, limit, dtype):
    """[pooled, limit]: the summed bilinear weights of the `grid` samples per
    bin along one axis (Paddle's rule: samples below -1 or above `limit`
    weigh 0; others clamp at 0 and at the last pixel)."""
    bins = size / pooled
    pos = (start + np.arange(pooled)[:, None] * bins
           + (np.arange(grid)[None, :] + 0.5) * bins / grid)          # [pooled, grid]
    valid = (pos >= -1.0) & (pos <= limit)
    pos = np.maximum(pos, 0.0)
    low = np.floor(pos).astype(np.int64)
    top = low >= limit - 1
    low = np.where(top, limit - 1, low)
    high = np.where(top, limit - 1, low + 1)
    frac = np.where(top, 0.0, pos - low)
    out = np.zeros((pooled, limit), dtype)
    rows = np.broadcast_to(np.arange(pooled)[:, None], pos.shape)
    np.add.at(out, (rows, low), np.where(valid, 1.0 - frac, 0.0))
    np.add.at(out, (rows, high), np.where(valid, frac, 0.0))
    return out


def roi_align_plan(box, height, width, pooled_height, pooled_width, spatial_scale,
                   sampling_ratio, aligned, dtype):
    """(Ay [ph, H], Ax [pw, W]) of one RoI, the 1 / count folded into Ay."""
    off = 0.5 if aligned else 0.0
    x1, y1, x2, y2 = (float(v) * spatial_scale - off for v in box)
    rw, rh = x2 - x1, y2 - y1
    if not aligned:
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    gh = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rh / pooled_height))
    gw = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rw / pooled_width))
    count = max(gh * gw, 1)
    ay = _axis_weights(y1, rh, pooled_height, max(gh, 0), height, np.float64) / count
    ax = _axis_weights(x1, rw, pooled_width, max(gw, 0), width, np.float64)
    return ay.astype(dtype), ax.astype(dtype)


def _roi_align_kernel(x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale,
                      sampling_ratio, aligned):
    n, c, h, w = x.shape
    rois = boxes.shape[0]
    batch = roi_batch_index(boxes_num, rois)
    out = np.zeros((rois, c, pooled_height, pooled_width), x.dtype)
    for r in range(rois):
        ay, ax = roi_align_plan(boxes[r], h, w, pooled_height, pooled_width, spatial_scale,
                                sampling_ratio, aligned, x.dtype)
        out[r] = ay @ x[batch[r]] @ ax.T
    return out


def _roi_align_grad_kernel(g, x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale,
                           sampling_ratio, aligned):
    n, c, h, w = x.shape
    rois = boxes.shape[0]
    batch = roi_batch_index(boxes_num, rois)
    gx = np.zeros(x.shape, g.dtype)
    for r in range(rois):
        ay, ax = roi_align_plan(boxes[r], h, w, pooled_height, pooled_width, spatial_scale,
                                sampling_ratio, aligned, g.dtype)
        gx[batch[r]] += ay.T @ g[r] @ ax
    return gx


def _roi_align_infer(x, boxes, boxes_num, pooled_height, pooled_width, **_):
    if len(x.shape) != 4:
        raise ValueError(f"roi_align: x must be 4-D [N, C, H, W], got {list(x.shape)}")
    if len(boxes.shape) != 2 or boxes.shape[1] not in (4, None):
        raise ValueError(f"roi_align: boxes must be [num_boxes, 4], got {list(boxes.shape)}")
    if len(boxes_num.shape) != 1:
        raise ValueError(f"roi_align: boxes_num must be 1-D [N], got {list(boxes_num.shape)}")
    return Aval((boxes.shape[0], x.shape[1], pooled_height, pooled_width), np.dtype(x.dtype))


def _roi_align_vjp(g, out, x, boxes, boxes_num, **attrs):
    from ..dispatch import bind
    return bind("roi_align_grad", g, x, boxes, boxes_num, **attrs), None, None


def _roi_align_grad_infer(g, x, boxes, boxes_num, **_):
    return Aval(tuple(x.shape), np.dtype(g.dtype))


def _roi_align_grad_vjp(gg, out, g, x, boxes, boxes_num, **attrs):
    """The gradient is linear in `g`: its own adjoint is roi_align."""
    from ..dispatch import bind
    return bind("roi_align", gg, boxes, boxes_num, **attrs), None, None, None


register_op("roi_align", _roi_align_kernel, _roi_align_infer, vjp=_roi_align_vjp, fresh=True)
register_op("roi_align_grad", _roi_align_grad_kernel, _roi_align_grad_infer,
            vjp=_roi_align_grad_vjp, fresh=True)


# ---- roi_pool -----------------------------------------------------------------------------
# Each bin is the max of x over an integer window of the RoI (Fast R-CNN,
# Paddle's rule: corners rounded half away from zero after `spatial_scale`,
# both edge pixels counted, bin edges floored/ceiled and clipped to the
# map; an empty window gives 0). The gradient goes to each window's first
# maximum (row-major), found again by the gradient op.
def _round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def roi_pool_windows(boxes, pooled_height, pooled_width, spatial_scale, height, width):
    """(hs, he) [R, ph] and (ws, we) [R, pw] int64 window bounds."""
    b = _round_away(np.asarray(boxes, np.float64) * spatial_scale).astype(np.int64)
    rh = np.maximum(b[:, 3] - b[:, 1] + 1, 1).astype(np.float64)
    rw = np.maximum(b[:, 2] - b[:, 0] + 1, 1).astype(np.float64)

    def bounds(start, size, pooled, limit):
        k = np.arange(pooled, dtype=np.float64)[None, :]
        lo = np.floor(k * (size[:, None] / pooled)).astype(np.int64) + start[:, None]
        hi = np.ceil((k + 1) * (size[:, None] / pooled)).astype(np.int64) + start[:, None]
        return np.clip(lo, 0, limit), np.clip(hi, 0, limit)
    hs, he = bounds(b[:, 1], rh, pooled_height, height)
    ws, we = bounds(b[:, 0], rw, pooled_width, width)
    return hs, he, ws, we


def _roi_pool_argmax(x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale):
    """(out [R, C, ph, pw], flat H*W index of each bin's max, -1 where empty)."""
    n, c, h, w = x.shape
    rois = boxes.shape[0]
    batch = roi_batch_index(boxes_num, rois)
    hs, he, ws, we = roi_pool_windows(boxes, pooled_height, pooled_width, spatial_scale, h, w)
    out = np.zeros((rois, c, pooled_height, pooled_width), x.dtype)
    arg = np.full(out.shape, -1, np.int64)
    for r in range(rois):
        for i in range(pooled_height):
            for j in range(pooled_width):
                if he[r, i] <= hs[r, i] or we[r, j] <= ws[r, j]:
                    continue
                win = x[batch[r], :, hs[r, i]:he[r, i], ws[r, j]:we[r, j]]
                k = np.argmax(win.reshape(c, -1), axis=1)
                ww = we[r, j] - ws[r, j]
                arg[r, :, i, j] = (hs[r, i] + k // ww) * w + ws[r, j] + k % ww
                out[r, :, i, j] = np.take_along_axis(win.reshape(c, -1), k[:, None], 1)[:, 0]
    return out, arg


def _roi_pool_kernel(x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale):
    return _roi_pool_argmax(x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale)[0]


def _roi_pool_grad_kernel(g, x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale):
    n, c, h, w = x.shape
    _, arg = _roi_pool_argmax(x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale)
    batch = roi_batch_index(boxes_num, boxes.shape[0])
    gx = np.zeros((n, c, h * w), g.dtype)
    hit = arg >= 0
    r, ch, _, _ = np.nonzero(hit)
    np.add.at(gx, (batch[r], ch, arg[hit]), g[hit])
    return gx.reshape(x.shape)


def _roi_pool_infer(x, boxes, boxes_num, pooled_height, pooled_width, **_):
    return _roi_align_infer(x, boxes, boxes_num, pooled_height, pooled_width)


def _roi_pool_vjp(g, out, x, boxes, boxes_num, **attrs):
    from ..dispatch import bind
    return bind("roi_pool_grad", g, x, boxes, boxes_num, **attrs), None, None


register_op("roi_pool", _roi_pool_kernel, _roi_pool_infer, vjp=_roi_pool_vjp, fresh=True)
register_op("roi_pool_grad", _roi_pool_grad_kernel,
            lambda g, x, boxes, boxes_num, **_: Aval(tuple(x.shape), np.dtype(g.dtype)),
            fresh=True)
