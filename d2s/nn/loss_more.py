"""More losses and distances of `d2s.nn.functional` that ported models call
(PaddlePaddle's signatures and defaults; PyTorch's semantics where Paddle's
are the same). Compositions of registered ops."""
from __future__ import annotations

import math

from ..core.ops import (abs as _abs, cast, exp, log, maximum, mean, reshape, sqrt,
                        sum as _sum, take_along_axis, unsqueeze, where)
from ..core.ops._base import lift
from .loss_functional import _check_reduction, _reduce

__all__ = ["pairwise_distance", "cosine_embedding_loss", "triplet_margin_loss",
           "multi_label_soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
           "sigmoid_focal_loss", "dice_loss", "multi_margin_loss",
           "triplet_margin_with_distance_loss", "npair_loss"]


def _softplus(z):
    """log(1 + exp(z)) from elementwise ops, stable for any z (exp of -|z| only)
    and with the derivative 1/2 at 0 (both `where`s pick the branch whose
    derivative gives it). ONNX Runtime has no float64 Softplus kernel, so the
    softplus op would not export these losses in float64."""
    pos = z > 0.0
    return where(pos, z, z * 0.0) + log(1.0 + exp(-where(pos, z, -z)))


def _pnorm(d, p, axis, keepdim):
    p = float(p)
    if p == math.inf:
        return _abs(d).max(axis=axis, keepdim=keepdim)
    if p == 2.0:
        return sqrt(_sum(d * d, axis=axis, keepdim=keepdim))
    if p == 1.0:
        return _sum(_abs(d), axis=axis, keepdim=keepdim)
    if p == 0.0:  # the count of nonzero entries
        return _sum(cast(d != 0.0, d.dtype), axis=axis, keepdim=keepdim)
    return _sum(_abs(d) ** p, axis=axis, keepdim=keepdim) ** (1.0 / p)


def pairwise_distance(x, y, p=2.0, epsilon=1e-6, keepdim=False, name=None):
    """||x - y + epsilon||_p over the last dim (epsilon keeps the norm's
    gradient finite at x == y)."""
    x, y = lift(x), lift(y)
    return _pnorm(x - y + epsilon, p, -1, keepdim)


def cosine_embedding_loss(input1, input2, label, margin=0.0, reduction="mean", name=None):
    """1 - cos(x1, x2) where label is 1; max(0, cos - margin) where it is -1
    (cosine over the last dim)."""
    _check_reduction(reduction, "cosine_embedding_loss")
    input1, input2, label = lift(input1), lift(input2), lift(label)
    eps = 1e-12
    dot = _sum(input1 * input2, axis=-1)
    n1 = _sum(input1 * input1, axis=-1) + eps
    n2 = _sum(input2 * input2, axis=-1) + eps
    cos = dot / sqrt(n1 * n2)
    label = cast(label, cos.dtype)
    loss = where(label == 1.0, 1.0 - cos, maximum(cos - margin, cos * 0.0))
    return _reduce(loss, reduction)


def triplet_margin_loss(input, positive, negative, margin=1.0, p=2, epsilon=1e-6, swap=False,
                        reduction="mean", name=None):
    """max(d(a, p) - d(a, n) + margin, 0) with `pairwise_distance`; `swap` uses
    the smaller of d(a, n) and d(p, n)."""
    _check_reduction(reduction, "triplet_margin_loss")
    a, pos, neg = lift(input), lift(positive), lift(negative)
    d_ap = pairwise_distance(a, pos, p, epsilon)
    d_an = pairwise_distance(a, neg, p, epsilon)
    if swap:
        from ..core.ops import minimum
        d_an = minimum(d_an, pairwise_distance(pos, neg, p, epsilon))
    loss = maximum(d_ap - d_an + margin, d_ap * 0.0)
    return _reduce(loss, reduction)


def multi_label_soft_margin_loss(input, label, weight=None, reduction="mean", name=None):
    """Per sample, the mean over classes of the binary logistic losses
    -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), each class scaled by `weight`."""
    _check_reduction(reduction, "multi_label_soft_margin_loss")
    x, y = lift(input), lift(label)
    y = cast(y, x.dtype)
    loss = y * _softplus(-x) + (1.0 - y) * _softplus(x)
    if weight is not None:
        loss = loss * lift(weight)
    return _reduce(mean(loss, axis=-1), reduction)


def poisson_nll_loss(input, label, log_input=True, full=False, epsilon=1e-8, reduction="mean",
                     name=None):
    """Poisson negative log-likelihood: exp(x) - y x (log_input), else
    x - y log(x + epsilon); `full` adds Stirling's term for y > 1."""
    _check_reduction(reduction, "poisson_nll_loss")
    x, y = lift(input), lift(label)
    y = cast(y, x.dtype)
    loss = exp(x) - y * x if log_input else x - y * log(x + epsilon)
    if full:
        safe = where(y > 1.0, y, y * 0.0 + 2.0)
        stirling = safe * log(safe) - safe + 0.5 * log(2.0 * math.pi * safe)
        loss = loss + where(y > 1.0, stirling, stirling * 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, label, variance, full=False, epsilon=1e-6, reduction="mean",
                      name=None):
    """0.5 (log(var) + (x - y)^2 / var); `full` adds 0.5 log(2 pi). var is
    clamped below at `epsilon` for the value only, as PyTorch's: its gradient
    is taken at the clamped value and passed to var unchanged. `variance` may
    have one dim fewer (a missing last dim) or a last dim of 1 (one per
    sample); a negative entry of an eager `variance` is an error."""
    from ..core.tensor import Tensor
    _check_reduction(reduction, "gaussian_nll_loss")
    x, y, var = lift(input), lift(label), lift(variance)
    if isinstance(var, Tensor) and bool((var.numpy() < 0).any()):
        raise ValueError("gaussian_nll_loss: variance has negative entries")
    if len(var.shape) == len(x.shape) - 1:
        var = unsqueeze(var, -1)
    var = var + (maximum(var, var * 0.0 + epsilon) - var).detach()
    loss = 0.5 * (log(var) + (x - y) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2.0 * math.pi)
    return _reduce(loss, reduction)


def sigmoid_focal_loss(logit, label, normalizer=None, alpha=0.25, gamma=2.0, reduction="sum",
                       name=None):
    """RetinaNet's focal loss on logits: the binary cross-entropy scaled by
    (1 - p_t)^gamma and alpha_t (alpha for positives, 1 - alpha for
    negatives; alpha = 0, PaddlePaddle's switch: no alpha weighting), divided by
    `normalizer`."""
    from ..core.ops import sigmoid
    _check_reduction(reduction, "sigmoid_focal_loss")
    x, y = lift(logit), lift(label)
    y = cast(y, x.dtype)
    p = sigmoid(x)
    ce = (1.0 - y) * x + _softplus(-x)                        # BCE with logits
    p_t = p * y + (1.0 - p) * (1.0 - y)
    loss = ce * (1.0 - p_t) ** gamma
    if alpha != 0:
        loss = loss * (alpha * y + (1.0 - alpha) * (1.0 - y))
    if normalizer is not None:
        loss = loss / lift(normalizer)
    return _reduce(loss, reduction)


def dice_loss(input, label, epsilon=1e-5, name=None):
    """1 - 2 |X ∩ Y| / (|X| + |Y|) per sample, averaged: `input` holds class
    probabilities in its last dim, `label` the class ids (last dim 1)."""
    x, label = lift(input), lift(label)
    if len(label.shape) != len(x.shape) or label.shape[-1] not in (1, None):
        raise ValueError(f"dice_loss: label must have the input's rank and a last dim of 1, "
                         f"got {list(label.shape)} for input {list(x.shape)}")
    from ..core.ops import arange
    from .common_functional import _dim_at_run_time
    # one-hot as a comparison with 0..C-1 (C may be known only at run time)
    hot = cast(cast(label, "int64") == arange(0, _dim_at_run_time(x, len(x.shape) - 1),
                                              dtype="int64"), x.dtype)
    axes = list(range(1, len(x.shape)))
    inter = _sum(x * hot, axis=axes)
    total = _sum(x, axis=axes) + _sum(hot, axis=axes)
    return mean(1.0 - inter * 2.0 / (total + epsilon))


def multi_margin_loss(input, label, p=1, margin=1.0, weight=None, reduction="mean", name=None):
    """Multi-class hinge loss: per sample, the sum over classes j != y of
    max(0, margin - x[y] + x[j])^p over the class count, scaled by weight[y]."""
    _check_reduction(reduction, "multi_margin_loss")
    x, label = lift(input), lift(label)
    if int(p) not in (1, 2):
        raise ValueError(f"multi_margin_loss: p must be 1 or 2, got {p}")
    if len(x.shape) != 2:
        raise ValueError(f"multi_margin_loss: input must be (N, C), got {list(x.shape)}")
    idx = cast(reshape(label, [-1, 1]), "int64")
    x_y = take_along_axis(x, idx, axis=1)
    h = maximum(x - x_y + margin, x * 0.0)
    if int(p) == 2:
        h = h * h
    from ..core.ops import arange
    from .common_functional import _dim_at_run_time
    classes = _dim_at_run_time(x, 1)
    own = idx == arange(0, classes, dtype="int64")             # the label's own class
    h = where(own, h * 0.0, h)
    loss = _sum(h, axis=1) / (classes if isinstance(classes, int) else cast(classes, x.dtype))
    if weight is not None:
        loss = loss * take_along_axis(lift(weight), reshape(idx, [-1]), axis=0)
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(input, positive, negative, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean", name=None):
    """`triplet_margin_loss` with any `distance_function(a, b)` (one distance
    per sample; `pairwise_distance` by default)."""
    _check_reduction(reduction, "triplet_margin_with_distance_loss")
    dist = distance_function or pairwise_distance
    a, pos, neg = lift(input), lift(positive), lift(negative)
    d_ap, d_an = dist(a, pos), dist(a, neg)
    if swap:
        from ..core.ops import minimum
        d_an = minimum(d_an, dist(pos, neg))
    return _reduce(maximum(d_ap - d_an + margin, d_ap * 0.0), reduction)


def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """N-pair loss (Sohn 2016), PaddlePaddle's form: the softmax cross-entropy
    of each row of anchor @ positive^T against the row's same-label mask
    (normalized to sum 1), averaged, plus l2_reg / 4 times the mean squared
    norms of the anchors and of the positives."""
    from ..core.ops import log_softmax, matmul, transpose
    a, p, labels = lift(anchor), lift(positive), lift(labels)
    if len(a.shape) != 2 or len(p.shape) != 2:
        raise ValueError(f"npair_loss: anchor and positive must be 2-D [batch, dims], got "
                         f"{list(a.shape)} and {list(p.shape)}")
    col = reshape(labels, [-1, 1])
    same = cast(col == transpose(col, [1, 0]), a.dtype)
    target = same / _sum(same, axis=1, keepdim=True)
    l2 = mean(_sum(a * a, axis=1)) + mean(_sum(p * p, axis=1))
    ce = -_sum(target * log_softmax(matmul(a, transpose(p, [1, 0])), axis=1), axis=1)
    return l2 * (0.25 * l2_reg) + mean(ce)
