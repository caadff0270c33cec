"""`d2s.metric`: `accuracy` (Paddle's function), written with d2s ops so that it
runs eagerly and inside converted functions alike."""
from __future__ import annotations

from ..core.ops import arange, cast, equal, reshape, sum as _sum, unsqueeze
from ..core.ops._base import lift

__all__ = ["accuracy"]


def accuracy(input, label, k=1, correct=None, total=None, name=None):
    """Fraction of rows of `input` (N, C scores) whose `label` (N or N x 1 ints)
    is among the `k` highest scores: a float32 0-d tensor. A label tied with
    other scores counts as ranked above them."""
    input, label = lift(input), lift(label)
    if len(input.shape) != 2:
        raise ValueError(f"accuracy: input must be (N, C) scores, got {list(input.shape)}")
    if len(label.shape) == 2:
        label = reshape(label, [-1])
    if len(label.shape) != 1 or label.dtype.kind not in "iu":
        raise ValueError(f"accuracy: label must be (N,) or (N, 1) integers, got "
                         f"{label.dtype}{list(label.shape)}")
    n_classes = input.shape[1]
    onehot = cast(equal(unsqueeze(label, 1),
                        reshape(arange(0, n_classes, dtype=label.dtype), [1, n_classes])),
                  input.dtype)
    own = _sum(input * onehot, axis=1, keepdim=True)
    above = _sum(cast(input > own, "int64"), axis=1)
    hits = cast(above < int(k), "float32")
    n = cast(_sum(cast(hits >= 0, "float32")), "float32")
    return _sum(hits) / n
