"""xla rules of the detection primitives (`d2s/core/ops/detection_ops.py`)."""
from __future__ import annotations

from ....core.registry import lowers


@lowers("xla", "nms_keep")
def _nms_keep(ns, boxes, groups, iou_threshold):
    """The pairwise IoU matrix, then one pass in order: box i is kept unless
    an earlier kept box of its group overlaps it above the threshold (the
    greedy rule; N is a compile-time size)."""
    jnp, lax = ns.jnp, ns.lax
    n = boxes.shape[0]
    x1, y1, x2, y2 = (boxes[:, k] for k in range(4))
    area = (x2 - x1) * (y2 - y1)
    w = jnp.maximum(jnp.minimum(x2[:, None], x2[None, :])
                    - jnp.maximum(x1[:, None], x1[None, :]), 0)
    h = jnp.maximum(jnp.minimum(y2[:, None], y2[None, :])
                    - jnp.maximum(y1[:, None], y1[None, :]), 0)
    inter = w * h
    iou = inter / (area[:, None] + area[None, :] - inter)
    over = (iou > iou_threshold) & (groups[:, None] == groups[None, :])
    earlier = jnp.arange(n)[:, None] < jnp.arange(n)[None, :]   # [j, i]: j before i
    over = over & earlier

    def step(i, keep):
        return keep.at[i].set(~jnp.any(over[:, i] & keep))
    return lax.fori_loop(0, n, step, jnp.zeros((n,), bool))



@lowers("xla", "proposal_nms_keep")
def _proposal_nms_keep(ns, boxes, valid, iou_threshold, eta, pixel_offset):
    """Every image at once: the pairwise IoU [N, K, K] (Paddle's
    JaccardOverlap), then one pass over the rows carrying the kept mask and
    each image's adaptive threshold (K is a compile-time size)."""
    jnp, lax = ns.jnp, ns.lax
    n, k = valid.shape
    norm = 1.0 if pixel_offset else 0.0
    a = [boxes[:, :, None, c] for c in range(4)]                   # rows
    b = [boxes[:, None, :, c] for c in range(4)]                   # columns

    def area(x1, y1, x2, y2):
        return jnp.where((x2 < x1) | (y2 < y1), 0.0, (x2 - x1 + norm) * (y2 - y1 + norm))
    apart = (b[0] > a[2]) | (b[2] < a[0]) | (b[1] > a[3]) | (b[3] < a[1])
    inter = ((jnp.minimum(a[2], b[2]) - jnp.maximum(a[0], b[0]) + norm)
             * (jnp.minimum(a[3], b[3]) - jnp.maximum(a[1], b[1]) + norm))
    union = area(*a) + area(*b) - inter
    iou = jnp.where(apart, 0.0, inter / jnp.where(apart, 1.0, union)).astype(boxes.dtype)
    thr0 = jnp.full((n,), iou_threshold, boxes.dtype)
    shrink = jnp.asarray(eta, boxes.dtype)

    def step(i, carry):
        keep, thr = carry
        over = ~(iou[:, :, i] <= thr[:, None])                     # [N, K]: row j vs box i
        hit = valid[:, i] & ~jnp.any(over & keep, axis=1)
        keep = keep.at[:, i].set(hit)
        if eta < 1:
            thr = jnp.where(hit & (thr > 0.5), thr * shrink, thr)
        return keep, thr
    keep, _ = lax.fori_loop(0, k, step, (jnp.zeros((n, k), bool), thr0))
    return keep

# ---- roi_align: the kernel's factorized form, every RoI at once ---------------------------
def _axis_weights(ns, start, size, pooled, grid, bound, limit):
    """[R, pooled, limit]: summed bilinear weights of each bin's samples
    along one axis; `grid` [R] samples per bin (at most `bound`)."""
    jnp = ns.jnp
    f = start.dtype
    bins = size / pooled
    k = jnp.arange(bound, dtype=f)
    live = k[None, :] < grid[:, None]                                     # [R, G]
    step = bins / jnp.maximum(grid, 1).astype(f)
    pos = (start[:, None, None] + jnp.arange(pooled, dtype=f)[None, :, None] * bins[:, None, None]
           + (k + 0.5)[None, None, :] * step[:, None, None])              # [R, pooled, G]
    valid = (pos >= -1.0) & (pos <= limit) & live[:, None, :]
    pos = jnp.maximum(pos, 0.0)
    low = jnp.floor(pos).astype(jnp.int32)
    top = low >= limit - 1
    low = jnp.where(top, limit - 1, low)
    high = jnp.where(top, limit - 1, low + 1)
    frac = jnp.where(top, 0.0, pos - low.astype(f))
    cols = jnp.arange(limit)
    w_low = jnp.where(valid, 1.0 - frac, 0.0)[..., None] * (low[..., None] == cols)
    w_high = jnp.where(valid, frac, 0.0)[..., None] * (high[..., None] == cols)
    return jnp.sum(w_low + w_high, axis=2)


def _roi_plan(ns, x_shape, boxes, boxes_num, pooled_height, pooled_width, spatial_scale,
              sampling_ratio, aligned):
    """(image index [R], Ay [R, ph, H] with 1/count folded in, Ax [R, pw, W]),
    computed in float64 as the kernel does. An adaptive grid is bounded by
    the map's size over the bins (a RoI inside the map never needs more);
    a larger RoI sends the call to numpy."""
    jnp = ns.jnp
    _, _, h, w = x_shape
    b = boxes.astype(jnp.float64)
    off = 0.5 if aligned else 0.0
    x1, y1, x2, y2 = (b[:, k] * spatial_scale - off for k in range(4))
    rw, rh = x2 - x1, y2 - y1
    if not aligned:
        rw, rh = jnp.maximum(rw, 1.0), jnp.maximum(rh, 1.0)
    if sampling_ratio > 0:
        gh = gw = jnp.full(b.shape[:1], sampling_ratio, jnp.int32)
        bound_h = bound_w = sampling_ratio
    else:
        gh = jnp.maximum(jnp.ceil(rh / pooled_height), 0).astype(jnp.int32)
        gw = jnp.maximum(jnp.ceil(rw / pooled_width), 0).astype(jnp.int32)
        bound_h = max(-(-h // pooled_height), 1)
        bound_w = max(-(-w // pooled_width), 1)
        ns.check_on_numpy(jnp.all(gh <= bound_h) & jnp.all(gw <= bound_w))
    count = jnp.maximum(gh * gw, 1).astype(jnp.float64)
    ay = _axis_weights(ns, y1, rh, pooled_height, gh, bound_h, h) / count[:, None, None]
    ax = _axis_weights(ns, x1, rw, pooled_width, gw, bound_w, w)
    ends = jnp.cumsum(boxes_num.astype(jnp.int64))
    ns.check_on_numpy(ends[-1] == b.shape[0])
    batch = jnp.searchsorted(ends, jnp.arange(b.shape[0]), side="right")
    return batch, ay, ax


@lowers("xla", "roi_align")
def _roi_align(ns, x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale,
               sampling_ratio, aligned):
    jnp = ns.jnp
    batch, ay, ax = _roi_plan(ns, x.shape, boxes, boxes_num, pooled_height, pooled_width,
                              spatial_scale, sampling_ratio, aligned)
    ay, ax = ay.astype(x.dtype), ax.astype(x.dtype)
    return jnp.einsum("rph,rchw,rqw->rcpq", ay, x[batch], ax)


@lowers("xla", "roi_align_grad")
def _roi_align_grad(ns, g, x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale,
                    sampling_ratio, aligned):
    jnp = ns.jnp
    batch, ay, ax = _roi_plan(ns, x.shape, boxes, boxes_num, pooled_height, pooled_width,
                              spatial_scale, sampling_ratio, aligned)
    ay, ax = ay.astype(g.dtype), ax.astype(g.dtype)
    per_roi = jnp.einsum("rph,rcpq,rqw->rchw", ay, g, ax)
    return jnp.zeros(x.shape, g.dtype).at[batch].add(per_roi)


# ---- roi_pool: every bin's window as masks over rows and columns --------------------------
def _roi_pool_argmax(ns, x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale):
    jnp = ns.jnp
    _, c, h, w = x.shape
    b = boxes.astype(jnp.float64) * spatial_scale
    b = (jnp.sign(b) * jnp.floor(jnp.abs(b) + 0.5)).astype(jnp.int64)
    rh = jnp.maximum(b[:, 3] - b[:, 1] + 1, 1).astype(jnp.float64)
    rw = jnp.maximum(b[:, 2] - b[:, 0] + 1, 1).astype(jnp.float64)

    def window(start, size, pooled, limit):   # [R, pooled, limit] mask
        k = jnp.arange(pooled, dtype=jnp.float64)[None, :]
        lo = jnp.floor(k * (size[:, None] / pooled)).astype(jnp.int64) + start[:, None]
        hi = jnp.ceil((k + 1) * (size[:, None] / pooled)).astype(jnp.int64) + start[:, None]
        lo, hi = jnp.clip(lo, 0, limit), jnp.clip(hi, 0, limit)
        idx = jnp.arange(limit)
        return (idx >= lo[..., None]) & (idx < hi[..., None])
    mh = window(b[:, 1], rh, pooled_height, h)
    mw = window(b[:, 0], rw, pooled_width, w)
    ends = jnp.cumsum(boxes_num.astype(jnp.int64))
    ns.check_on_numpy(ends[-1] == b.shape[0])
    batch = jnp.searchsorted(ends, jnp.arange(b.shape[0]), side="right")
    inside = mh[:, None, :, None, :, None] & mw[:, None, None, :, None, :]  # [R,1,ph,pw,H,W]
    vals = x[batch][:, :, None, None, :, :]
    low = jnp.array(-jnp.inf, x.dtype)
    masked = jnp.where(inside, vals, low).reshape(
        (b.shape[0], c, pooled_height, pooled_width, h * w))
    arg = jnp.argmax(masked, axis=-1)
    empty = ~jnp.any(inside.reshape(inside.shape[:4] + (h * w,)), axis=-1)  # [R,1,ph,pw]
    out = jnp.take_along_axis(masked, arg[..., None], axis=-1)[..., 0]
    out = jnp.where(empty, jnp.zeros((), x.dtype), out)
    arg = jnp.where(empty, -1, arg)
    return out, arg, batch


@lowers("xla", "roi_pool")
def _roi_pool(ns, x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale):
    return _roi_pool_argmax(ns, x, boxes, boxes_num, pooled_height, pooled_width,
                            spatial_scale)[0]


@lowers("xla", "roi_pool_grad")
def _roi_pool_grad(ns, g, x, boxes, boxes_num, pooled_height, pooled_width, spatial_scale):
    jnp = ns.jnp
    n, c, h, w = x.shape
    _, arg, batch = _roi_pool_argmax(ns, x, boxes, boxes_num, pooled_height, pooled_width,
                                     spatial_scale)
    hit = arg >= 0
    bi = jnp.broadcast_to(batch[:, None, None, None], arg.shape)
    ci = jnp.broadcast_to(jnp.arange(c)[None, :, None, None], arg.shape)
    gx = jnp.zeros((n, c, h * w), g.dtype).at[bi, ci, jnp.where(hit, arg, 0)].add(
        jnp.where(hit, g, jnp.zeros((), g.dtype)))
    return gx.reshape(x.shape)
