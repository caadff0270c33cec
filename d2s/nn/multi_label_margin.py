"""Paddle's `F.multi_label_margin_loss` (PyTorch's multilabel_margin_loss):
per sample, the target classes are the label entries before the first -1;
the loss is the sum, over each target j and each non-target class k, of
`max(0, 1 - (x[j] - x[k]))`, over the class count. A composite of
take_along_axis, one-hot masks and a broadcast hinge: gradients, xla and
ONNX come from those ops."""
from __future__ import annotations

from ..core.ops import (arange, cast, clip, cumsum, maximum, reshape, sum as _sum,
                        take_along_axis, unsqueeze)
from ..core.ops._base import lift
from .loss_functional import _check_reduction, _reduce

__all__ = ["multi_label_margin_loss"]


def multi_label_margin_loss(input, label, reduction="mean", name=None):
    """`input` (N, C) scores, `label` (N, C) class indices, each row's
    targets ended by the first -1 (the rest ignored)."""
    _check_reduction(reduction, "multi_label_margin_loss")
    x, label = lift(input), lift(label)
    if len(x.shape) != 2 or len(label.shape) != 2:
        raise ValueError(f"multi_label_margin_loss: input and label must be (N, C), got "
                         f"{list(x.shape)} and {list(label.shape)}")
    if label.dtype.kind not in "iu":
        raise TypeError(f"multi_label_margin_loss: label must be integers, got {label.dtype}")
    c = x.shape[1]
    if c is None:
        raise ValueError("multi_label_margin_loss: the class count (dim 1) must be known")
    label = cast(label, "int64")
    # (N, C): entries before the first -1 (a count of -1s so far, not a product: ONNX
    # has cumsum but no cumprod)
    valid = cast(cumsum(cast(label < 0, "int64"), axis=1) == 0, x.dtype)
    safe = clip(label, 0, c - 1)
    onehot = cast(unsqueeze(safe, 2) == reshape(arange(0, c, dtype="int64"), [1, 1, c]),
                  x.dtype)                                         # (N, C_j, C_k)
    is_target = cast(_sum(onehot * unsqueeze(valid, 2), axis=1) > 0, x.dtype)  # (N, C)
    x_target = take_along_axis(x, safe, 1)                         # (N, C_j)
    hinge = maximum(1.0 - unsqueeze(x_target, 2) + unsqueeze(x, 1), x[:, :1, None] * 0.0)
    mask = unsqueeze(valid, 2) * unsqueeze(1.0 - is_target, 1)
    loss = _sum(hinge * mask, axis=[1, 2]) / float(c)
    return _reduce(loss, reduction)
