"""ONNX forms of the detection primitives (`d2s/core/ops/detection_ops.py`)."""
from __future__ import annotations

import numpy as np

from ...core.registry import NotLowerable, lowers, register_lowering


@lowers("onnx", "nms_keep")
def _nms_keep(ns, boxes, groups, iou_threshold):
    """ONNX's NonMaxSuppression with the groups as its classes: each box's
    score is 1 for its own group (a descending ramp keeps the given order),
    0 elsewhere, and a score threshold above 0 leaves a box only its own
    group. The selected (batch, class, box) rows become the mask. The
    operator takes float32 boxes: float64 ones are cast."""
    f32 = np.dtype(np.float32)
    b = ns.cast(boxes, f32)
    n = ns.node("Shape", b, start=0, end=1)                          # [1]
    count = ns.node("Squeeze", n, ns.ints([0]))
    ramp = ns.node("Range", ns.scalar(0, np.int64), count, ns.scalar(1, np.int64))
    rank = ns.node("Sub", ns.cast(count, f32), ns.cast(ramp, f32))   # N .. 1
    # groups as class ids 0..G-1 (the ids themselves may be any int64)
    g_max = ns.node("ReduceMax", groups, keepdims=1)
    g_min = ns.node("ReduceMin", groups, keepdims=1)
    classes = ns.node("Add", ns.node("Sub", g_max, g_min), ns.ints([1]))  # [1]
    cls_range = ns.node("Range", ns.scalar(0, np.int64), ns.node("Squeeze", classes,
                                                                 ns.ints([0])),
                        ns.scalar(1, np.int64))
    own = ns.node("Equal", ns.node("Unsqueeze", ns.node("Sub", groups, g_min), ns.ints([0])),
                  ns.node("Unsqueeze", cls_range, ns.ints([1])))       # [G, N]
    scores = ns.node("Mul", ns.cast(own, f32), ns.node("Unsqueeze", rank, ns.ints([0])))
    picked = ns.node("NonMaxSuppression", ns.node("Unsqueeze", b, ns.ints([0])),
                     ns.node("Unsqueeze", scores, ns.ints([0])), n,
                     ns.const(np.asarray([iou_threshold], np.float32)),
                     ns.const(np.asarray([0.5], np.float32)), dtype=np.dtype(np.int64))
    idx = ns.node("Gather", picked, ns.scalar(2, np.int64), axis=1)     # [K]
    zeros = ns.node("Mul", ramp, ns.scalar(0, np.int64))
    ones = ns.node("Add", ns.node("Mul", idx, ns.scalar(0, np.int64)), ns.scalar(1, np.int64))
    hit = ns.node("ScatterElements", zeros, idx, ones, axis=0)
    return ns.cast(hit, np.bool_)




@lowers("onnx", "proposal_nms_keep")
def _proposal_nms_keep(ns, boxes, valid, iou_threshold, eta, pixel_offset):
    """ONNX's NonMaxSuppression, batched as the op is: each image's rows
    score K .. 1 in their (score) order where valid, 0 elsewhere, and a
    score threshold of 0.5 leaves out the invalid ones; the selected
    (image, box) pairs become the mask. Paddle's pixel-offset IoU and its
    eta-adaptive threshold have no form there (float64 boxes are cast to
    float32, as the operator takes)."""
    if pixel_offset or eta < 1:
        raise ns.Unsupported("generate_proposals' NMS with pixel_offset=True or eta < 1 "
                             "(ONNX's NonMaxSuppression has neither Paddle's +1 pixel IoU nor "
                             "an adaptive threshold): export with pixel_offset=False, eta=1.0")
    f32, i64 = np.dtype(np.float32), np.dtype(np.int64)
    b = ns.cast(boxes, f32)
    shape = ns.node("Shape", valid)                                  # [N, K]
    k = ns.node("Gather", shape, ns.scalar(1, i64), axis=0)          # K (0-d)
    ramp = ns.node("Range", ns.scalar(0, i64), k, ns.scalar(1, i64))
    rank = ns.node("Sub", ns.cast(k, f32), ns.cast(ramp, f32))       # K .. 1
    scores = ns.node("Mul", ns.cast(valid, f32), ns.node("Unsqueeze", rank, ns.ints([0])))
    picked = ns.node("NonMaxSuppression", b, ns.node("Unsqueeze", scores, ns.ints([1])),
                     ns.node("Unsqueeze", k, ns.ints([0])),
                     ns.const(np.asarray([iou_threshold], np.float32)),
                     ns.const(np.asarray([0.5], np.float32)), dtype=i64)   # [S, 3]
    where = ns.node("Gather", picked, ns.const(np.asarray([0, 2], np.int64)), axis=1)
    ones = ns.node("Add", ns.node("Mul", ns.node("Gather", picked, ns.scalar(0, i64), axis=1),
                                  ns.scalar(0, i64)), ns.scalar(1, i64))       # [S] of 1
    zeros = ns.node("Mul", ns.cast(valid, i64), ns.scalar(0, i64))
    return ns.cast(ns.node("ScatterND", zeros, where, ones), np.bool_)

_GRAD = NotLowerable("a gradient op of training programs; an ONNX model holds the forward "
                     "pass only (export the layer, not a training step)")
register_lowering("onnx", "roi_align_grad", _GRAD)
register_lowering("onnx", "roi_pool_grad", _GRAD)


def _batch_index(ns, boxes, boxes_num):
    """Image of each RoI: how many of boxes_num's running totals it is past."""
    ends = ns.node("CumSum", ns.cast(boxes_num, np.int64), ns.scalar(0, np.int64))
    rois = ns.node("Shape", boxes, start=0, end=1)
    r = ns.node("Range", ns.scalar(0, np.int64), ns.node("Squeeze", rois, ns.ints([0])),
                ns.scalar(1, np.int64))
    past = ns.node("LessOrEqual", ns.node("Unsqueeze", ends, ns.ints([0])),
                   ns.node("Unsqueeze", r, ns.ints([1])))              # [R, N]
    return ns.node("ReduceSum", ns.cast(past, np.int64), ns.ints([1]), keepdims=0)


@lowers("onnx", "roi_pool")
def _roi_pool(ns, x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale):
    """The kernel's windows as row and column masks and a masked ReduceMax
    (ONNX's MaxRoiPool has no ONNX Runtime kernel at the opsets d2s exports)."""
    f64, i64 = np.dtype(np.float64), np.dtype(np.int64)
    b = ns.node("Mul", ns.cast(boxes, f64), ns.scalar(spatial_scale, f64))
    b = ns.cast(ns.node("Mul", ns.node("Sign", b),
                        ns.node("Floor", ns.node("Add", ns.node("Abs", b),
                                                 ns.scalar(0.5, f64)))), i64)
    shape = ns.node("Shape", x)

    def col(k):
        return ns.node("Gather", b, ns.scalar(k, np.int64), axis=1)   # [R]

    def window(start, end, pooled, dim):       # [R, pooled, limit] mask
        size = ns.node("Max", ns.node("Add", ns.node("Sub", end, start), ns.scalar(1, i64)),
                       ns.scalar(1, i64))
        per = ns.node("Div", ns.node("Unsqueeze", ns.cast(size, f64), ns.ints([1])),
                      ns.scalar(float(pooled), f64))                   # [R, 1]
        k = ns.const(np.arange(pooled, dtype=np.float64)[None, :])
        s0 = ns.node("Unsqueeze", start, ns.ints([1]))
        lo = ns.node("Add", ns.cast(ns.node("Floor", ns.node("Mul", k, per)), i64), s0)
        hi = ns.node("Add", ns.cast(ns.node("Ceil", ns.node("Mul", ns.node(
            "Add", k, ns.scalar(1.0, f64)), per)), i64), s0)
        limit = ns.node("Gather", shape, ns.scalar(dim, np.int64), axis=0)
        zero = ns.scalar(0, i64)
        lo = ns.node("Min", ns.node("Max", lo, zero), limit)
        hi = ns.node("Min", ns.node("Max", hi, zero), limit)
        idx = ns.node("Range", zero, limit, ns.scalar(1, i64))
        return ns.node("And", ns.node("GreaterOrEqual", idx, ns.node("Unsqueeze", lo, ns.ints([2]))),
                       ns.node("Less", idx, ns.node("Unsqueeze", hi, ns.ints([2]))))
    mh = window(col(1), col(3), pooled_height, 2)                      # [R, ph, H]
    mw = window(col(0), col(2), pooled_width, 3)                       # [R, pw, W]
    inside = ns.node("And", ns.node("Unsqueeze", mh, ns.ints([1, 3, 5])),
                     ns.node("Unsqueeze", mw, ns.ints([1, 2, 4])))     # [R,1,ph,pw,H,W]
    vals = ns.node("Unsqueeze", ns.node("Gather", x, _batch_index(ns, boxes, boxes_num), axis=0),
                   ns.ints([2, 3]))                                    # [R,C,1,1,H,W]
    masked = ns.node("Where", inside, vals, ns.scalar(-np.inf, x.dtype))
    out = ns.node("ReduceMax", masked, ns.ints([4, 5]), keepdims=0)
    some = ns.node("ReduceMax", ns.cast(inside, i64), ns.ints([4, 5]), keepdims=0)
    return ns.node("Where", ns.node("Greater", some, ns.scalar(0, i64)), out,
                   ns.scalar(0, x.dtype))


def _axis_weights(ns, start, size, pooled, grid, limit):
    """[R, pooled, limit]: the kernel's summed bilinear sample weights along
    one axis (float64); `grid` [R] samples per bin, as many as the largest
    grid looped over (a run-time Range) and masked per RoI."""
    f64 = np.dtype(np.float64)
    one = ns.scalar(1.0, f64)
    bins = ns.node("Div", size, ns.scalar(float(pooled), f64))                   # [R]
    most = ns.cast(ns.node("ReduceMax", grid, keepdims=0), np.int64)
    k = ns.cast(ns.node("Range", ns.scalar(0, np.int64), most, ns.scalar(1, np.int64)), f64)
    live = ns.node("Less", ns.node("Unsqueeze", k, ns.ints([0])),
                   ns.node("Unsqueeze", grid, ns.ints([1])))                      # [R, G]
    step = ns.node("Div", bins, ns.node("Max", grid, one))
    r3 = ns.ints([1, 2])
    pos = ns.node("Add", ns.node("Add", ns.node("Unsqueeze", start, r3), ns.node(
        "Mul", ns.const(np.arange(pooled, dtype=np.float64)[None, :, None]),
        ns.node("Unsqueeze", bins, r3))), ns.node(
        "Mul", ns.node("Unsqueeze", ns.node("Add", k, ns.scalar(0.5, f64)), ns.ints([0, 1])),
        ns.node("Unsqueeze", step, r3)))                                         # [R, P, G]
    lim = ns.cast(limit, f64)
    valid = ns.node("And", ns.node("And", ns.node("GreaterOrEqual", pos, ns.scalar(-1.0, f64)),
                                   ns.node("LessOrEqual", pos, lim)),
                    ns.node("Unsqueeze", live, ns.ints([1])))
    pos = ns.node("Max", pos, ns.scalar(0.0, f64))
    low = ns.node("Floor", pos)
    last = ns.node("Sub", lim, one)
    top = ns.node("GreaterOrEqual", low, last)
    low = ns.node("Where", top, last, low)
    high = ns.node("Where", top, last, ns.node("Add", low, one))
    frac = ns.node("Where", top, ns.scalar(0.0, f64), ns.node("Sub", pos, low))
    zero = ns.scalar(0.0, f64)
    cols = ns.cast(ns.node("Range", ns.scalar(0, np.int64), limit, ns.scalar(1, np.int64)), f64)

    def spread(at, weight):  # [R, P, G] -> [R, P, G, limit]
        hit = ns.cast(ns.node("Equal", ns.node("Unsqueeze", at, ns.ints([3])), cols), f64)
        return ns.node("Mul", ns.node("Unsqueeze", ns.node("Where", valid, weight, zero),
                                      ns.ints([3])), hit)
    both = ns.node("Add", spread(low, ns.node("Sub", one, frac)), spread(high, frac))
    return ns.node("ReduceSum", both, ns.ints([2]), keepdims=0)


@lowers("onnx", "roi_align")
def _roi_align(ns, x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale,
               sampling_ratio, aligned):
    """The kernel's factorized form, out[r] = Ay[r] @ x[b] @ Ax[r]^T, as an
    Einsum (ONNX Runtime has no RoiAlign kernel at the opsets d2s exports)."""
    f64 = np.dtype(np.float64)
    b = ns.node("Sub", ns.node("Mul", ns.cast(boxes, f64), ns.scalar(spatial_scale, f64)),
                ns.scalar(0.5 if aligned else 0.0, f64))

    def col(i):
        return ns.node("Gather", b, ns.scalar(i, np.int64), axis=1)
    x1, y1, x2, y2 = (col(i) for i in range(4))
    rw, rh = ns.node("Sub", x2, x1), ns.node("Sub", y2, y1)
    if not aligned:
        rw, rh = (ns.node("Max", t, ns.scalar(1.0, f64)) for t in (rw, rh))
    if sampling_ratio > 0:
        gh = gw = ns.node("Add", ns.node("Mul", rw, ns.scalar(0.0, f64)),
                          ns.scalar(float(sampling_ratio), f64))
    else:
        zero = ns.scalar(0.0, f64)
        gh = ns.node("Max", ns.node("Ceil", ns.node("Div", rh, ns.scalar(float(pooled_height),
                                                                       f64))), zero)
        gw = ns.node("Max", ns.node("Ceil", ns.node("Div", rw, ns.scalar(float(pooled_width),
                                                                       f64))), zero)
    count = ns.node("Max", ns.node("Mul", gh, gw), ns.scalar(1.0, f64))
    shape = ns.node("Shape", x)
    h = ns.node("Gather", shape, ns.scalar(2, np.int64), axis=0)
    w = ns.node("Gather", shape, ns.scalar(3, np.int64), axis=0)
    ay = ns.node("Div", _axis_weights(ns, y1, rh, pooled_height, gh, h),
                 ns.node("Unsqueeze", count, ns.ints([1, 2])))
    ax = _axis_weights(ns, x1, rw, pooled_width, gw, w)
    xb = ns.node("Gather", x, _batch_index(ns, boxes, boxes_num), axis=0)
    ay, ax = ns.cast(ay, x.dtype), ns.cast(ax, x.dtype)
    return ns.node("Einsum", ay, xb, ax, equation="rph,rchw,rqw->rcpq")
