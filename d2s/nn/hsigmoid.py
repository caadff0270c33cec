"""Paddle's hierarchical sigmoid loss, `F.hsigmoid_loss` / `nn.HSigmoidLoss`:
each class is a leaf of a binary tree and its loss the sum, over the
non-leaf nodes on its path, of a binary logistic loss
`log(1 + exp(p)) - bit * p` with `p = w[node] . x + b[node]` clipped to
[-40, 40] (Paddle's kernel; its gradient is taken as if unclipped, as
Paddle's is). The default tree is Paddle's complete binary tree over the
codes `label + num_classes` (node `(c >> (j + 1)) - 1` and bit `(c >> j) & 1`
at depth j); a custom tree comes as `path_table` / `path_code` (one row per
sample, ended by -1). Composite: every path is padded to the longest and
masked, so shapes are static and gradients, xla and ONNX come from the
ops used."""
from __future__ import annotations

import math

import numpy as np

from ..core.ops import (cast, clip, cumsum, detach, exp, gather, log1p, reshape, sum as _sum,
                        unsqueeze, where)
from ..core.ops._base import lift
from .layer import Layer

__all__ = ["hsigmoid_loss", "HSigmoidLoss"]


def _default_paths(label, num_classes):
    """(node index, bit, valid) [N, L] of Paddle's default tree."""
    depth = int(math.floor(math.log2(num_classes - 1))) + 1
    code = reshape(label, [-1, 1]) + num_classes                     # [N, 1]
    powers = lift(np.array([[1 << j for j in range(depth)]], np.int64))  # [1, L]
    index = code // (powers * 2) - 1
    bit = (code // powers) % 2
    valid = code >= powers * 2
    return index, bit, valid


def hsigmoid_loss(input, label, num_classes, weight, bias=None, path_table=None,
                  path_code=None, is_sparse=False, name=None):
    """[N, 1] losses of `input` [N, D] for `label` [N] or [N, 1] (int64);
    `weight` [C, D] and `bias` [C] or [C, 1] per non-leaf node."""
    x = lift(input)
    label = None if label is None else cast(lift(label), "int64")  # unused by a custom tree
    if len(x.shape) != 2:
        raise ValueError(f"hsigmoid_loss: input must be [N, D], got {list(x.shape)}")
    if (path_table is None) != (path_code is None):
        raise ValueError("hsigmoid_loss: give both path_table and path_code (a custom tree) "
                         "or neither (the default tree)")
    if path_table is None:
        if int(num_classes) < 2:
            raise ValueError(f"hsigmoid_loss: num_classes must be >= 2, got {num_classes}")
        if label is None:
            raise ValueError("hsigmoid_loss: label is needed for the default tree")
        index, bit, valid = _default_paths(label, int(num_classes))
    else:
        index, bit = cast(lift(path_table), "int64"), cast(lift(path_code), "int64")
        valid = cumsum(cast(index < 0, "int64"), axis=1) == 0   # before the first -1
    safe = where(valid, index, index * 0)
    n, depth = safe.shape
    w = reshape(gather(lift(weight), reshape(safe, [-1])), [-1, depth, x.shape[1]])
    pre = _sum(w * unsqueeze(x, 1), axis=-1)                       # [N, L]
    if bias is not None:
        pre = pre + reshape(gather(reshape(lift(bias), [-1]), reshape(safe, [-1])), [-1, depth])
    pre = pre + detach(clip(pre, -40.0, 40.0) - pre)  # clipped value, unclipped gradient
    per_node = log1p(exp(pre)) - cast(bit, x.dtype) * pre
    return _sum(where(valid, per_node, per_node * 0.0), axis=1, keepdim=True)


class HSigmoidLoss(Layer):
    """`hsigmoid_loss` with its weight [C, feature_size] and bias [C, 1] as
    parameters (C = num_classes - 1 for the default tree, num_classes for a
    custom one); `forward(input, label, path_table=None, path_code=None)`."""

    def __init__(self, feature_size, num_classes, weight_attr=None, bias_attr=None,
                 is_custom=False, is_sparse=False, name=None):
        super().__init__(name)
        if int(num_classes) < 2 and not is_custom:
            raise ValueError(f"HSigmoidLoss: num_classes must be >= 2, got {num_classes}")
        self._num_classes, self._is_custom = int(num_classes), bool(is_custom)
        rows = self._num_classes if is_custom else self._num_classes - 1
        self.weight = self.create_parameter([rows, int(feature_size)], attr=weight_attr)
        self.bias = self.create_parameter([rows, 1], attr=bias_attr, is_bias=True)

    def forward(self, input, label, path_table=None, path_code=None):
        if self._is_custom and (path_table is None or path_code is None):
            raise ValueError("HSigmoidLoss(is_custom=True): pass path_table and path_code")
        return hsigmoid_loss(input, label, self._num_classes, self.weight, self.bias,
                             path_table, path_code)
