"""Paddle's `paddle.vision.ops` detection helpers beyond YOLO: `nms`,
`box_coder`, `prior_box`, `roi_align` / `RoIAlign`, `roi_pool` / `RoIPool`
(primitives in d2s/core/ops/detection_ops.py) and `psroi_pool` /
`PSRoIPool` (a composition of window masks).

nms's result length depends on the data: its kept-box mask is the
fixed-shape `nms_keep` op (a compiling backend holds it), and the indices
are taken from the mask with a bool index, as `nonzero` does (on xla such a
program runs on numpy, after the backend's warning)."""
from __future__ import annotations

import numpy as np

from ..core.dispatch import bind
from ..core.ops import (arange, argsort, cast, gather, getitem, reshape, zeros_like)
from ..core.ops._base import constant, lift
from ..core.ops.search import _dim

__all__ = ["nms", "box_coder", "prior_box", "roi_align", "RoIAlign", "roi_pool", "RoIPool",
           "psroi_pool", "PSRoIPool"]


def nms(boxes, iou_threshold=0.3, scores=None, category_idxs=None, categories=None,
        top_k=None):
    """Greedy non-maximum suppression of `boxes` ([N, 4] as x1, y1, x2, y2):
    a box is dropped when a kept box with a higher score overlaps it with
    IoU > `iou_threshold`. Without `scores` the boxes are taken in their
    given order and the kept indices come in that order. With `scores`, the
    kept indices (into `boxes`) come sorted by descending score (ties keep
    their order); with `category_idxs` (int [N]) and `categories` (the ids
    to keep), boxes only suppress boxes of their own category and boxes of
    other categories are dropped; `top_k` keeps the first k."""
    boxes = lift(boxes)
    if len(boxes.shape) != 2 or boxes.shape[1] not in (4, None):
        raise ValueError(f"nms: boxes must be [num_boxes, 4], got {list(boxes.shape)}")
    if np.dtype(boxes.dtype).kind != "f":
        raise TypeError(f"nms: boxes must be float32 or float64, got {boxes.dtype}")
    n = _dim(boxes, 0)
    index = arange(n)
    thr = float(iou_threshold)
    if scores is None:
        groups = cast(zeros_like(boxes[:, 0]), "int64")
        return getitem(index, bind("nms_keep", boxes, groups, iou_threshold=thr))
    scores = lift(scores)
    if len(scores.shape) != 1:
        raise ValueError(f"nms: scores must be 1-D [num_boxes], got {list(scores.shape)}")
    order = argsort(scores, descending=True)
    sorted_boxes = gather(boxes, order)
    if category_idxs is None:
        groups = cast(zeros_like(scores), "int64")
        keep = bind("nms_keep", sorted_boxes, groups, iou_threshold=thr)
    else:
        if categories is None:
            raise ValueError("nms: category_idxs needs categories, the list of category ids "
                             "to keep")
        from ..core.ops import any as _any, equal, logical_and, unsqueeze
        groups = gather(cast(lift(category_idxs), "int64"), order)
        ids = constant(np.asarray([int(c) for c in categories], np.int64).reshape(-1))
        listed = _any(equal(unsqueeze(groups, -1), ids), axis=-1)
        keep = logical_and(bind("nms_keep", sorted_boxes, groups, iou_threshold=thr), listed)
    kept = getitem(order, keep)
    if top_k is not None:
        top_k = int(top_k)
        if top_k < 0:
            raise ValueError(f"nms: top_k must be >= 0, got {top_k}")
        kept = kept[:top_k]
    return kept


def _pair(output_size, what):
    if isinstance(output_size, int):
        return output_size, output_size
    h, w = (int(v) for v in output_size)
    if h <= 0 or w <= 0:
        raise ValueError(f"{what}: output_size must be positive, got {output_size}")
    return h, w


def _rois_of(x, boxes, boxes_num, what):
    x, boxes = lift(x), lift(boxes)
    if boxes_num is None:
        if x.shape[0] != 1:
            raise ValueError(f"{what}: boxes_num (the number of boxes of each image) is needed "
                             f"when x holds {x.shape[0]} images; pass boxes_num=[n0, n1, ...]")
        boxes_num = cast(reshape(_dim(boxes, 0), [1]), "int32")
    boxes_num = lift(boxes_num)
    if np.dtype(boxes_num.dtype).kind not in "iu":
        raise TypeError(f"{what}: boxes_num must be an integer tensor, got {boxes_num.dtype}")
    if np.dtype(boxes.dtype) != np.dtype(x.dtype):
        boxes = cast(boxes, x.dtype)
    return x, boxes, boxes_num


def roi_align(x, boxes, boxes_num, output_size, spatial_scale=1.0, sampling_ratio=-1,
              aligned=True, name=None):
    """RoI Align (Mask R-CNN): each of the `boxes` ([R, 4] as x1, y1, x2, y2 in
    input coordinates, grouped by image: `boxes_num[i]` of image i) is cut into
    `output_size` bins, and each bin is the mean of bilinear samples of `x`
    ([N, C, H, W]) on a `sampling_ratio` x `sampling_ratio` grid (<= 0: an
    adaptive ceil(bin size) grid per RoI). Box coordinates are scaled by
    `spatial_scale`; `aligned` shifts them by half a pixel (and allows RoIs
    smaller than a pixel). -> [R, C, out_h, out_w]; differentiable in `x`."""
    ph, pw = _pair(output_size, "roi_align")
    x, boxes, boxes_num = _rois_of(x, boxes, boxes_num, "roi_align")
    return bind("roi_align", x, boxes, boxes_num, pooled_height=ph, pooled_width=pw,
                spatial_scale=float(spatial_scale), sampling_ratio=int(sampling_ratio),
                aligned=bool(aligned))


def _layer():
    from ..nn import Layer
    return Layer


class RoIAlign(_layer()):
    """`roi_align` as a layer: `RoIAlign(output_size, spatial_scale)(x, boxes,
    boxes_num, aligned=True)`."""

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._output_size = output_size
        self._spatial_scale = spatial_scale

    def forward(self, x, boxes, boxes_num, aligned=True):
        return roi_align(x, boxes, boxes_num, self._output_size, self._spatial_scale,
                         aligned=aligned)


def _centers(boxes, extra):
    """(center x, center y, width, height) of corner boxes [..., 4]; `extra`
    is 1 for pixel boxes (box_normalized=False: the corners are inclusive)."""
    w = boxes[..., 2] - boxes[..., 0] + extra
    h = boxes[..., 3] - boxes[..., 1] + extra
    return boxes[..., 0] + w * 0.5, boxes[..., 1] + h * 0.5, w, h


def box_coder(prior_box, prior_box_var, target_box, code_type="encode_center_size",
              box_normalized=True, axis=0, name=None):
    """Paddle's center-size box coding against prior boxes ([M, 4] corners).

    encode_center_size: target_box [N, 4] corners -> [N, M, 4] offsets
    ((tcx - pcx) / pw, (tcy - pcy) / ph, log|tw / pw|, log|th / ph|), each
    divided by its variance. decode_center_size: target_box [N, M, 4]
    offsets (priors along dim 1; with `axis=1`, [M, N, 4] with priors along
    dim 0) -> corner boxes: the inverse, offsets scaled by the variances.
    `prior_box_var`: a [M, 4] tensor, a list of 4 floats, or None (ones).
    With `box_normalized=False` widths count both edge pixels (+1)."""
    from ..core.ops import exp, log, abs as _abs, stack, unsqueeze
    prior_box, target_box = lift(prior_box), lift(target_box)
    if len(prior_box.shape) != 2:
        raise ValueError(f"box_coder: prior_box must be [M, 4], got {list(prior_box.shape)}")
    extra = 0.0 if box_normalized else 1.0
    if prior_box_var is None:
        var = None
    elif isinstance(prior_box_var, (list, tuple)):
        if len(prior_box_var) != 4:
            raise ValueError(f"box_coder: a list prior_box_var holds 4 floats, got "
                             f"{prior_box_var}")
        var = [float(v) for v in prior_box_var]
    else:
        v = cast(lift(prior_box_var), prior_box.dtype)
        var = [v[:, k] for k in range(4)]
    pcx, pcy, pw, ph = _centers(prior_box, extra)
    if code_type == "encode_center_size":
        if len(target_box.shape) != 2:
            raise ValueError(f"box_coder: encode_center_size takes target_box [N, 4], got "
                             f"{list(target_box.shape)}")
        t = unsqueeze(target_box, 1)                                   # [N, 1, 4]
        tcx, tcy, tw, th = _centers(t, extra)
        parts = [(tcx - pcx) / pw, (tcy - pcy) / ph, log(_abs(tw / pw)), log(_abs(th / ph))]
        if var is not None:
            parts = [p / v for p, v in zip(parts, var)]
        return stack(parts, axis=-1)
    if code_type != "decode_center_size":
        raise ValueError(f"box_coder: code_type must be 'encode_center_size' or "
                         f"'decode_center_size', got {code_type!r}")
    if len(target_box.shape) != 3:
        raise ValueError(f"box_coder: decode_center_size takes target_box [N, M, 4], got "
                         f"{list(target_box.shape)}")
    if axis not in (0, 1):
        raise ValueError(f"box_coder: axis must be 0 or 1, got {axis!r}")

    def along(p):  # a per-prior [M] value against target_box's prior dim
        return unsqueeze(p, 0 if axis == 0 else 1)
    pcx, pcy, pw, ph = (along(p) for p in (pcx, pcy, pw, ph))
    if var is None:
        var = [1.0] * 4
    elif not isinstance(var[0], float):
        var = [along(v) for v in var]
    cx = var[0] * target_box[..., 0] * pw + pcx
    cy = var[1] * target_box[..., 1] * ph + pcy
    w = exp(var[2] * target_box[..., 2]) * pw
    h = exp(var[3] * target_box[..., 3]) * ph
    return stack([cx - w * 0.5, cy - h * 0.5, cx + w * 0.5 - extra, cy + h * 0.5 - extra],
                 axis=-1)


def roi_pool(x, boxes, boxes_num, output_size, spatial_scale=1.0, name=None):
    """RoI max pooling (Fast R-CNN): each of the `boxes` ([R, 4] x1, y1, x2, y2,
    grouped by image as `boxes_num` says) is scaled by `spatial_scale`, its
    corners rounded to pixels, and cut into `output_size` integer windows of
    `x` ([N, C, H, W]); each output is its window's max (0 for an empty
    window). -> [R, C, out_h, out_w]; the gradient goes to each window's
    first maximum."""
    ph, pw = _pair(output_size, "roi_pool")
    x, boxes, boxes_num = _rois_of(x, boxes, boxes_num, "roi_pool")
    return bind("roi_pool", x, boxes, boxes_num, pooled_height=ph, pooled_width=pw,
                spatial_scale=float(spatial_scale))


class RoIPool(_layer()):
    """`roi_pool` as a layer: `RoIPool(output_size, spatial_scale)(x, boxes, boxes_num)`."""

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._output_size = output_size
        self._spatial_scale = spatial_scale

    def forward(self, x, boxes, boxes_num):
        return roi_pool(x, boxes, boxes_num, self._output_size, self._spatial_scale)


def _expand_ratios(aspect_ratios, flip):
    """1 first, then each new ratio (and with `flip` its inverse), duplicates
    (within 1e-6) skipped: Paddle's order of the priors at a location."""
    out = [1.0]
    for ar in aspect_ratios:
        ar = float(ar)
        if any(abs(ar - o) < 1e-6 for o in out):
            continue
        out.append(ar)
        if flip:
            out.append(1.0 / ar)
    return out


def prior_box(input, image, min_sizes, max_sizes=None, aspect_ratios=[1.0],
              variance=[0.1, 0.1, 0.2, 0.2], flip=False, clip=False, steps=[0.0, 0.0],
              offset=0.5, min_max_aspect_ratios_order=False, name=None):
    """SSD's prior (anchor) boxes for a feature map `input` [N, C, H, W] of an
    `image` [N, C, IH, IW]: at each cell, for each min size, a box per
    aspect ratio (1 first; with `flip` the inverses too) and, with
    `max_sizes`, one of size sqrt(min * max) (after the ratio-1 box with
    `min_max_aspect_ratios_order`, else last). Corners are normalized by the
    image size (clipped to [0, 1] with `clip`). -> (boxes [H, W, P, 4],
    variances [H, W, P, 4]); constants of the shapes, as in Paddle."""
    input, image = lift(input), lift(image)
    if len(input.shape) != 4 or len(image.shape) != 4:
        raise ValueError(f"prior_box: input and image must be 4-D NCHW, got "
                         f"{list(input.shape)} and {list(image.shape)}")
    fh, fw = input.shape[2:]
    ih, iw = image.shape[2:]
    if None in (fh, fw, ih, iw):
        raise ValueError(f"prior_box: the map sizes must be known (input {list(input.shape)}, "
                         f"image {list(image.shape)}): the boxes are constants of them")
    min_sizes = [float(v) for v in min_sizes]
    max_sizes = [float(v) for v in (max_sizes or [])]
    if max_sizes and len(max_sizes) != len(min_sizes):
        raise ValueError(f"prior_box: max_sizes {max_sizes} must pair with min_sizes "
                         f"{min_sizes}")
    ratios = _expand_ratios(aspect_ratios, flip)
    step_w, step_h = (float(v) for v in steps)
    if step_w == 0 or step_h == 0:
        step_w, step_h = iw / fw, ih / fh
    sizes = []  # (half width, half height) per prior, in order
    for k, m in enumerate(min_sizes):
        by_ratio = [(m * np.sqrt(ar) / 2, m / np.sqrt(ar) / 2) for ar in ratios]
        big = [(np.sqrt(m * max_sizes[k]) / 2,) * 2] if max_sizes else []
        if min_max_aspect_ratios_order:
            sizes += [(m / 2, m / 2)] + big + [wh for ar, wh in zip(ratios, by_ratio)
                                               if abs(ar - 1.0) >= 1e-6]
        else:
            sizes += by_ratio + big
    half = np.array(sizes)                                              # [P, 2]
    cx = (np.arange(fw) + offset) * step_w
    cy = (np.arange(fh) + offset) * step_h
    cx = np.broadcast_to(cx[None, :, None], (fh, fw, len(sizes)))
    cy = np.broadcast_to(cy[:, None, None], (fh, fw, len(sizes)))
    boxes = np.stack([(cx - half[:, 0]) / iw, (cy - half[:, 1]) / ih,
                      (cx + half[:, 0]) / iw, (cy + half[:, 1]) / ih], axis=-1)
    if clip:
        boxes = np.clip(boxes, 0.0, 1.0)
    dt = np.dtype(input.dtype)
    var = np.broadcast_to(np.asarray(variance, np.float64).reshape(1, 1, 1, 4), boxes.shape)
    return constant(boxes.astype(dt)), constant(np.ascontiguousarray(var).astype(dt))


def _batch_of(boxes_num, boxes):
    """The image index of each RoI (RoIs grouped by image, `boxes_num[i]` of
    image i): how many running totals of boxes_num it is past."""
    from ..core.ops import cumsum, sum as _sum, unsqueeze
    ends = cumsum(cast(boxes_num, "int64"), axis=0)
    r = arange(_dim(boxes, 0))
    return _sum(cast(unsqueeze(ends, 0) <= unsqueeze(r, 1), "int64"), axis=1)


def psroi_pool(x, boxes, boxes_num, output_size, spatial_scale=1.0, name=None):
    """Position-sensitive RoI average pooling (R-FCN): x [N, C, H, W] with C =
    out_channels * out_h * out_w; bin (i, j) of output channel c averages
    input channel (c * out_h + i) * out_w + j over its window of the RoI
    (corners rounded half away from zero, the far edge pixel included, then
    scaled by `spatial_scale`; windows floored/ceiled and clipped to the
    map; an empty window gives 0). -> [R, out_channels, out_h, out_w];
    differentiable in x."""
    from ..core.ops import (abs as _abs, ceil, floor, maximum, minimum, sign, sum as _sum,
                            unsqueeze, where)
    ph, pw = _pair(output_size, "psroi_pool")
    x, boxes, boxes_num = _rois_of(x, boxes, boxes_num, "psroi_pool")
    c, h, w = x.shape[1:]
    if None in (c, h, w):
        raise ValueError(f"psroi_pool: the channels and map size of x must be known, got "
                         f"{list(x.shape)}")
    if c % (ph * pw):
        raise ValueError(f"psroi_pool: x's {c} channels must be out_channels * {ph} * {pw}")
    oc = c // (ph * pw)
    dt = np.dtype(x.dtype)
    b = sign(boxes) * floor(_abs(boxes) + 0.5)                         # C's round()
    x1, y1 = b[:, 0] * spatial_scale, b[:, 1] * spatial_scale
    x2, y2 = (b[:, 2] + 1.0) * spatial_scale, (b[:, 3] + 1.0) * spatial_scale

    def window(start, end, pooled, limit):  # [R, pooled, limit] 0/1 weights
        size = maximum(end - start, start * 0.0 + 0.1) / float(pooled)
        k = constant(np.arange(pooled, dtype=dt))
        lo = floor(unsqueeze(size, 1) * k + unsqueeze(start, 1))
        hi = ceil(unsqueeze(size, 1) * (k + 1.0) + unsqueeze(start, 1))
        lo = minimum(maximum(lo, lo * 0.0), lo * 0.0 + float(limit))
        hi = minimum(maximum(hi, hi * 0.0), hi * 0.0 + float(limit))
        idx = constant(np.arange(limit, dtype=dt))
        inside = (idx >= unsqueeze(lo, 2)) & (idx < unsqueeze(hi, 2))
        return cast(inside, dt)
    mh = window(y1, y2, ph, h)                                         # [R, ph, H]
    mw = window(x1, x2, pw, w)                                         # [R, pw, W]
    xb = reshape(gather(x, _batch_of(boxes_num, boxes)), [-1, oc, ph, pw, h, w])
    rows = _sum(xb * reshape(mh, [-1, 1, ph, 1, h, 1]), axis=4)        # [R, oc, ph, pw, W]
    total = _sum(rows * reshape(mw, [-1, 1, 1, pw, w]), axis=4)        # [R, oc, ph, pw]
    area = unsqueeze(_sum(mh, axis=2), 2) * unsqueeze(_sum(mw, axis=2), 1)   # [R, ph, pw]
    area = unsqueeze(area, 1)
    safe = where(area > 0.0, area, area * 0.0 + 1.0)
    return where(area > 0.0, total / safe, total * 0.0)


class PSRoIPool(_layer()):
    """`psroi_pool` as a layer: `PSRoIPool(output_size, spatial_scale)(x, boxes, boxes_num)`."""

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._output_size = output_size
        self._spatial_scale = spatial_scale

    def forward(self, x, boxes, boxes_num):
        return psroi_pool(x, boxes, boxes_num, self._output_size, self._spatial_scale)
