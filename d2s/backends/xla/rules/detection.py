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
