"""Loss functions of `d2s.nn.functional` (Paddle's signatures and defaults).

`cross_entropy`'s common case (hard int labels of shape (N,), no weight,
smoothing or soft labels, mean reduction) is the fused `cross_entropy` op:
its gradient reuses the forward's softmax. Labels there must be valid class
indices: the op raises on any other, the default `ignore_index=-100`
included (Paddle documents a negative `ignore_index` as "ignore nothing";
pass a non-negative one to skip labels). The general path skips labels
equal to `ignore_index`; a label outside [0, C) there contributes nothing.
Everything else is a composition of registered ops, differentiated by their
rules.
"""
from __future__ import annotations

from ..core.ops import (abs as _abs, arange, cast, cross_entropy as _fused_cross_entropy,
                        equal, exp, log, log_softmax, maximum, mean, not_equal,
                        relu as _relu, reshape, softplus as _softplus, squeeze, sum as _sum,
                        unsqueeze, where)
from ..core.ops._base import lift
from ..core.shapes import normalize_axis

__all__ = ["cross_entropy", "softmax_with_cross_entropy", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "mse_loss", "l1_loss", "smooth_l1_loss",
           "nll_loss", "kl_div", "margin_ranking_loss", "square_error_cost",
           "hinge_embedding_loss", "soft_margin_loss", "log_loss"]

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction, where_, allowed=_REDUCTIONS):
    if reduction not in allowed:
        raise ValueError(f"{where_}: reduction must be one of {list(allowed)}, got "
                         f"{reduction!r}")


def _reduce(loss, reduction):
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return _sum(loss)
    return loss


def _is_int(x):
    return x.dtype.kind in "iu"


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean",
                  soft_label=False, axis=-1, use_softmax=True, label_smoothing=0.0, name=None):
    """Softmax cross-entropy as Paddle computes it.

    Hard labels: int class indices shaped as `input` without `axis` (or with
    a size-1 `axis`); labels equal to `ignore_index` add nothing and leave
    the mean's divisor. `weight` (C,) weighs each sample by its class; the
    mean then divides by the sum of the weights used. Soft labels: a
    distribution over `axis`. `label_smoothing` mixes the target with the
    uniform distribution. `reduction="none"` keeps `axis` with size 1 (Paddle's
    shape). `use_softmax=False` takes probabilities instead of logits.
    """
    _check_reduction(reduction, "cross_entropy")
    input, label = lift(input), lift(label)
    rank = len(input.shape)
    axis = normalize_axis(axis, rank, "cross_entropy")
    label_smoothing = float(label_smoothing)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                         f"{label_smoothing}")
    if (not soft_label and weight is None and reduction == "mean" and use_softmax
            and label_smoothing == 0.0 and rank == 2 and axis == 1 and ignore_index == -100
            and _is_int(label) and len(label.shape) in (1, 2)):
        if len(label.shape) == 2:
            if label.shape[1] != 1:
                raise ValueError(f"cross_entropy: hard labels must be shaped (N,) or (N, 1), "
                                 f"got {list(label.shape)}")
            label = squeeze(label, 1)
        return _fused_cross_entropy(input, label)
    logp = log_softmax(input, axis) if use_softmax else log(input)
    n_classes = input.shape[axis]
    if n_classes is None:  # known at run time: read there
        from ..core.ops import shape as _shape
        n_classes = _shape(input)[axis]
    if soft_label:
        if tuple(label.shape) != tuple(input.shape):
            raise ValueError(f"cross_entropy: soft labels must have the input's shape "
                             f"{list(input.shape)}, got {list(label.shape)}")
        target = cast(label, logp.dtype)
        valid = None
    else:
        if not _is_int(label):
            raise TypeError(f"cross_entropy: hard labels must be integer class indices, got "
                            f"{label.dtype} (pass soft_label=True for distributions)")
        if len(label.shape) == rank:
            if label.shape[axis] != 1:
                raise ValueError(f"cross_entropy: hard labels must have size 1 on axis {axis}, "
                                 f"got shape {list(label.shape)}")
            label = squeeze(label, axis)
        if len(label.shape) != rank - 1:
            raise ValueError(f"cross_entropy: labels of shape {list(label.shape)} do not match "
                             f"input of shape {list(input.shape)} with axis={axis}")
        lab = unsqueeze(label, axis)
        shape = [1] * rank
        shape[axis] = n_classes
        classes = reshape(arange(0, n_classes, dtype=label.dtype), shape)
        target = cast(equal(lab, classes), logp.dtype)
        valid = cast(not_equal(lab, ignore_index), logp.dtype)
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
    if weight is not None:
        weight = lift(weight)
        shape = [1] * rank
        shape[axis] = n_classes
        w = reshape(cast(weight, logp.dtype), shape)
        loss = -_sum(target * logp * w, axis=axis, keepdim=True)
        # the weight of each sample: its class's (hard) or the target's mix (soft)
        sample_w = _sum(target * w, axis=axis, keepdim=True) if valid is None else \
            _sum(cast(equal(lab, classes), logp.dtype) * w, axis=axis, keepdim=True)
    else:
        loss = -_sum(target * logp, axis=axis, keepdim=True)
        sample_w = None
    if valid is not None:
        loss = loss * valid
    if reduction == "sum":
        return _sum(loss)
    if reduction == "none":
        return loss
    if valid is None and sample_w is None:
        return mean(loss)
    if valid is not None and sample_w is None:
        return _sum(loss) / _sum(valid)
    if valid is None:  # soft labels with a weight: Paddle divides by the weights' sum
        return _sum(loss) / _sum(sample_w)
    return _sum(loss) / _sum(sample_w * valid)


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100, axis=-1,
                               return_softmax=False):
    """Paddle's older form: the unreduced loss (the class axis kept with size 1)."""
    loss = cross_entropy(logits, label, ignore_index=ignore_index, reduction="none",
                         soft_label=soft_label, axis=axis)
    if return_softmax:
        from ..core.ops import softmax
        return loss, softmax(logits, axis)
    return loss


def _weighted(loss, weight):
    return loss if weight is None else loss * weight


def binary_cross_entropy(input, label, weight=None, reduction="mean", name=None):
    """`-(y log p + (1 - y) log(1 - p))`, each log clamped at -100 (as Paddle and
    PyTorch do, so p = 0 or 1 gives a finite loss)."""
    _check_reduction(reduction, "binary_cross_entropy")
    input, label = lift(input), lift(label)
    log_p = maximum(log(input), -100.0)
    log_q = maximum(log(1.0 - input), -100.0)
    loss = -(label * log_p + (1.0 - label) * log_q)
    return _reduce(_weighted(loss, weight), reduction)


def binary_cross_entropy_with_logits(logit, label, weight=None, reduction="mean",
                                     pos_weight=None, name=None):
    """Sigmoid plus binary cross-entropy in one stable form:
    `(1 - y) x + (1 + (pos_weight - 1) y) * log(1 + exp(-x))`."""
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    logit, label = lift(logit), lift(label)
    softplus_neg = _softplus(-logit)  # log(1 + exp(-x))
    if pos_weight is None:
        loss = (1.0 - label) * logit + softplus_neg
    else:
        loss = (1.0 - label) * logit + (1.0 + (lift(pos_weight) - 1.0) * label) * softplus_neg
    return _reduce(_weighted(loss, weight), reduction)


def mse_loss(input, label, reduction="mean", name=None):
    """Squared error `(input - label) ** 2`, reduced by "mean", "sum" or "none"."""
    _check_reduction(reduction, "mse_loss")
    diff = lift(input) - label
    return _reduce(diff * diff, reduction)


def square_error_cost(input, label):
    """Elementwise `(input - label) ** 2` (no reduction)."""
    diff = lift(input) - label
    return diff * diff


def l1_loss(input, label, reduction="mean", name=None):
    _check_reduction(reduction, "l1_loss")
    return _reduce(_abs(lift(input) - label), reduction)


def smooth_l1_loss(input, label, reduction="mean", delta=1.0, name=None):
    """Huber loss: `0.5 d^2` where `|d| < delta`, else `delta (|d| - 0.5 delta)`."""
    _check_reduction(reduction, "smooth_l1_loss")
    d = lift(input) - label
    a = _abs(d)
    loss = where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta)
    return _reduce(loss, reduction)


def nll_loss(input, label, weight=None, ignore_index=-100, reduction="mean", name=None):
    """Negative log-likelihood of log-probabilities `input` (N, C, ...) at int
    labels (N, ...); ignored labels add nothing and leave the mean's divisor,
    which is the sum of the used weights."""
    _check_reduction(reduction, "nll_loss")
    input, label = lift(input), lift(label)
    if not _is_int(label):
        raise TypeError(f"nll_loss: labels must be integer class indices, got {label.dtype}")
    if len(input.shape) < 2 or len(label.shape) != len(input.shape) - 1:
        raise ValueError(f"nll_loss: expects input (N, C, ...) and labels (N, ...), got "
                         f"{list(input.shape)} and {list(label.shape)}")
    n_classes = input.shape[1]
    lab = unsqueeze(label, 1)
    shape = [1] * len(input.shape)
    shape[1] = n_classes
    onehot = cast(equal(lab, reshape(arange(0, n_classes, dtype=label.dtype), shape)),
                  input.dtype)
    if weight is not None:
        onehot = onehot * reshape(cast(lift(weight), input.dtype), shape)
    onehot = onehot * cast(not_equal(lab, ignore_index), input.dtype)
    loss = -_sum(input * onehot, axis=1)
    if reduction == "mean":
        return _sum(loss) / _sum(onehot)
    return _reduce(loss, reduction)


def kl_div(input, label, reduction="mean", log_target=False, name=None):
    """`label * (log(label) - input)` with `input` log-probabilities (0 where
    label is 0); "batchmean" divides the sum by the batch size."""
    _check_reduction(reduction, "kl_div", _REDUCTIONS + ("batchmean",))
    input, label = lift(input), lift(label)
    if log_target:
        loss = exp(label) * (label - input)
    else:
        positive = label > 0
        safe = where(positive, label, label * 0.0 + 1.0)
        loss = where(positive, label * (log(safe) - input), label * 0.0)
    if reduction == "batchmean":  # sum / N, as a mean over the batch of per-sample sums
        rank = len(loss.shape)
        return mean(_sum(loss, axis=list(range(1, rank)))) if rank > 1 else mean(loss)
    return _reduce(loss, reduction)


def margin_ranking_loss(input, other, label, margin=0.0, reduction="mean", name=None):
    """`max(0, -label * (input - other) + margin)`."""
    _check_reduction(reduction, "margin_ranking_loss")
    loss = _relu(-lift(label) * (lift(input) - other) + margin)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, label, margin=1.0, reduction="mean", name=None):
    """`input` where label is 1, `max(0, margin - input)` where label is -1."""
    _check_reduction(reduction, "hinge_embedding_loss")
    input, label = lift(input), lift(label)
    loss = where(label == 1.0, input, _relu(margin - input))
    return _reduce(loss, reduction)


def soft_margin_loss(input, label, reduction="mean", name=None):
    """`log(1 + exp(-label * input))`."""
    _check_reduction(reduction, "soft_margin_loss")
    z = -lift(label) * lift(input)
    return _reduce(_softplus(z), reduction)


def log_loss(input, label, epsilon=1e-4, name=None):
    """`-label log(input + eps) - (1 - label) log(1 - input + eps)`, unreduced."""
    input, label = lift(input), lift(label)
    return -label * log(input + epsilon) - (1.0 - label) * log(1.0 - input + epsilon)

