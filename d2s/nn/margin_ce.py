"""Paddle's `F.margin_cross_entropy` (the combined-margin softmax loss of
ArcFace/CosFace/SphereFace, single device): `logits` are cosines; the
label's becomes `cos(margin1 * acos(x) + margin2) - margin3`, all are
multiplied by `scale`, and the loss is the softmax cross entropy. A
composite of acos/cos/where/log_softmax; `group` (model-parallel classes)
is not supported."""
from __future__ import annotations

import math

from ..core.ops import (acos, arange, cast, clip, cos, exp, mean, reshape, sqrt, sum as _sum,
                        where)
from ..core.ops._base import lift
from ..core.ops.nn_ops import log_softmax

__all__ = ["margin_cross_entropy"]


def margin_cross_entropy(logits, label, margin1=1.0, margin2=0.5, margin3=0.0, scale=64.0,
                         group=None, return_softmax=False, reduction="mean"):
    """Loss (mean, sum, or per sample [N, 1] with reduction None/'none') and,
    with `return_softmax`, the softmax of the margin-adjusted scaled logits."""
    if group is not None and group is not False:
        raise NotImplementedError("margin_cross_entropy: group (classes split over devices) "
                                  "is not supported; leave group=None")
    if reduction not in ("mean", "sum", None, "none"):
        raise ValueError(f"margin_cross_entropy: reduction must be 'mean', 'sum' or None, got "
                         f"{reduction!r}")
    x = lift(logits)
    if len(x.shape) != 2 or x.shape[1] is None:
        raise ValueError(f"margin_cross_entropy: logits must be [N, C] with C known, got "
                         f"{list(x.shape)}")
    label = reshape(cast(lift(label), "int64"), [-1, 1])
    own = label == reshape(arange(0, x.shape[1], dtype="int64"), [1, -1])    # [N, C]
    c = clip(x, -1.0, 1.0)
    m1, m2, m3 = float(margin1), float(margin2), float(margin3)
    if m1 == 1.0:  # cos(theta + m2) by the angle sum: no acos (ONNX Runtime lacks float64 Acos)
        target = c * math.cos(m2) - sqrt(clip(1.0 - c * c, 0.0, 1.0)) * math.sin(m2) - m3
    else:
        target = cos(m1 * acos(c) + m2) - m3
    adjusted = where(own, target, x) * float(scale)
    logp = log_softmax(adjusted, axis=1)
    loss = -_sum(where(own, logp, logp * 0.0), axis=1, keepdim=True)      # [N, 1]
    if reduction == "mean":
        loss = mean(loss)
    elif reduction == "sum":
        loss = _sum(loss)
    return (loss, exp(logp)) if return_softmax else loss
