"""More activations of `d2s.nn.functional` that ported models call: glu,
softmin, maxout, rrelu, gumbel_softmax. Compositions of registered ops."""
from __future__ import annotations

import numpy as np

from ..core.ops import (argmax, cast, log, max as _max, one_hot, reshape, sigmoid, softmax,
                        split, transpose, uniform, where)
from ..core.ops._base import lift
from ..core.shapes import normalize_axis
from .vision_functional import _dims

__all__ = ["glu", "softmin", "maxout", "rrelu", "gumbel_softmax"]


def glu(x, axis=-1, name=None):
    """Gated linear unit: the halves (a, b) of `axis`, a * sigmoid(b)."""
    x = lift(x)
    axis = normalize_axis(axis, len(x.shape), "glu")
    n = x.shape[axis]
    if n is not None and n % 2:
        raise ValueError(f"glu: dim {axis} of the input (size {n}) must be even")
    a, b = split(x, 2, axis=axis)
    return a * sigmoid(b)


def softmin(x, axis=-1, dtype=None, name=None):
    """softmax(-x) over `axis` (PyTorch's `softmin`; `dtype` casts the input first)."""
    x = lift(x) if dtype is None else cast(lift(x), dtype)
    return softmax(-x, axis=axis)


def maxout(x, groups, axis=1, name=None):
    """Max over each run of `groups` consecutive channels of `axis` (1, or -1 / 3
    for channel-last): (N, C, H, W) -> (N, C / groups, H, W)."""
    x = lift(x)
    rank = len(x.shape)
    axis = normalize_axis(axis, rank, "maxout")
    if axis not in (1, rank - 1):
        raise ValueError(f"maxout: axis must be 1 or the last dim, got {axis}")
    groups = int(groups)
    c = x.shape[axis]
    if groups <= 0 or (c is not None and c % groups):
        raise ValueError(f"maxout: groups={groups} must be positive and divide the {c} "
                         "channels")
    dims = _dims(x)
    split_dims = dims[:axis] + [-1, groups] + dims[axis + 1:]
    return _max(reshape(x, split_dims), axis=axis + 1)


def rrelu(x, lower=1.0 / 8.0, upper=1.0 / 3.0, training=True, name=None):
    """Randomized leaky ReLU: negative inputs scaled by a slope drawn uniformly
    from [lower, upper] per element while training, by (lower + upper) / 2
    otherwise."""
    x = lift(x)
    lower, upper = float(lower), float(upper)
    if not 0.0 <= lower <= upper <= 1.0:
        raise ValueError(f"rrelu: needs 0 <= lower <= upper <= 1, got lower={lower}, "
                         f"upper={upper}")
    if training and upper > lower:
        slope = uniform(_dims(x), x.dtype, lower, upper)
    else:
        slope = (lower + upper) / 2.0
    return where(x >= 0.0, x, x * slope)


def gumbel_softmax(x, temperature=1.0, hard=False, axis=-1, name=None):
    """softmax((x + g) / temperature) with g Gumbel(0, 1) noise; `hard` gives
    the one-hot of its argmax forward and the soft sample's gradient."""
    x = lift(x)
    axis = normalize_axis(axis, len(x.shape), "gumbel_softmax")
    tiny = float(np.finfo(np.dtype(x.dtype)).tiny)
    u = uniform(_dims(x), x.dtype, tiny, 1.0)
    y = softmax((x - log(-log(u))) / float(temperature), axis=axis)
    if not hard:
        return y
    rank = len(x.shape)
    order = [a for a in range(rank) if a != axis] + [axis]
    back = [order.index(a) for a in range(rank)]
    hot = one_hot(argmax(y, axis=axis), x.shape[axis] if x.shape[axis] is not None else
                  _dims(x)[axis])
    hot = transpose(cast(hot, x.dtype), back) if axis != rank - 1 else cast(hot, x.dtype)
    return hot - y.detach() + y
