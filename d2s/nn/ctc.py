"""`F.ctc_loss`: Connectionist Temporal Classification loss, PaddlePaddle's form.

The forward is the alpha recursion over the blank-extended label sequence in
log space, one step per time step: unrolled where the time dim is known, one
`while` op over the same step where a program leaves it unknown. Its gradient
is the recursion's own derivative, taken by the ops' rules: exactly the
alpha-beta (forward-backward) gradient, with no second recursion written by
hand. Impossible states hold a large negative
finite number instead of -inf, so that `logsumexp`'s derivative never meets
`-inf - -inf`; their weight in any reachable state underflows to exactly 0.
A target the input cannot emit (too short for its labels) gets an infinite
loss, as PyTorch's (zero_infinity=False).

As PaddlePaddle's warp-ctc, `log_probs` are read as unscaled scores: a
log-softmax over the classes is applied first. It leaves inputs that already
are log-probabilities unchanged, so log-softmax outputs (PyTorch's
convention) give PyTorch's values too.
"""
from __future__ import annotations

import numpy as np

from ..core.ops import (arange, cast, concat, full_like, log_softmax, logsumexp, maximum,
                        mean, reshape, stack, sum as _sum, take_along_axis, unsqueeze, where)
from ..core.control import while_loop
from ..core.ops._base import lift
from .common_functional import _dim_at_run_time

__all__ = ["ctc_loss"]

_IMPOSSIBLE = -1e30          # log of "no path": finite, far below any real log-probability


def _lengths(v, what):
    v = lift(v)
    if np.dtype(v.dtype).kind not in "iu":
        raise TypeError(f"ctc_loss: {what} must be an integer tensor, got {v.dtype}")
    if len(v.shape) != 1:
        raise ValueError(f"ctc_loss: {what} must be 1-D [batch_size], got shape "
                         f"{list(v.shape)}")
    return cast(v, "int64")


def _extended(labels, blank):
    """(B, 2L + 1): blank, l1, blank, l2, ..., blank."""
    blanks = full_like(labels, blank)
    inter = reshape(stack([blanks, labels], axis=2), [0, -1])            # b l1 b l2 ...
    return concat([inter, blanks[:, :1]], axis=1)


def _shift(a, k, fill):
    """`a` moved k states right along axis 1, `fill` coming in."""
    return concat([full_like(a[:, :k], fill), a[:, :-k]], axis=1)


def ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=0, reduction="mean",
             norm_by_times=False, name=None):
    """CTC loss of `log_probs` [T, B, C] (unscaled scores; log-softmax is applied)
    against padded `labels` [B, L]. reduction 'none' gives [B]; 'mean' divides
    each loss by its label length and averages; 'sum' adds them.
    `norm_by_times` divides each sequence's gradient (not its loss) by its
    input length, as warp-ctc's option does."""
    log_probs = lift(log_probs)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"ctc_loss: reduction must be 'none', 'mean' or 'sum', got "
                         f"{reduction!r}")
    if len(log_probs.shape) != 3:
        raise ValueError(f"ctc_loss: log_probs must be 3-D [max_logit_length, batch_size, "
                         f"num_classes + 1], got shape {list(log_probs.shape)}")
    steps = log_probs.shape[0]
    labels = lift(labels)
    if np.dtype(labels.dtype).kind not in "iu" or len(labels.shape) != 2:
        raise ValueError(f"ctc_loss: labels must be an integer tensor [batch_size, "
                         f"max_label_length], got {labels.dtype} of shape "
                         f"{list(labels.shape)}")
    labels = cast(labels, "int64")
    t_len = _lengths(input_lengths, "input_lengths")
    l_len = _lengths(label_lengths, "label_lengths")
    lp = log_softmax(log_probs, axis=2)
    ext = _extended(labels, int(blank))                                  # (B, S)
    emit = take_along_axis(lp, unsqueeze(ext, 0), axis=2)                # (T, B, S)
    neg = full_like(emit[0], _IMPOSSIBLE)
    # a skip over a blank is allowed onto a label that differs from the one before it
    skip_ok = (ext != blank) & (ext != _shift(ext, 2, blank))
    state = reshape(arange(0, _dim_at_run_time(ext, 1), dtype="int64"), [1, -1])
    alpha = where(state < 2, emit[0], neg)
    t_col = unsqueeze(t_len, 1)

    def advance(t, alpha):
        """alpha after time step t (kept as it is past a sequence's length)."""
        two = where(skip_ok, _shift(alpha, 2, _IMPOSSIBLE), neg)
        step = logsumexp(stack([alpha, _shift(alpha, 1, _IMPOSSIBLE), two]), axis=0) + emit[t]
        return where(t_col > t, step, alpha)

    if steps is not None:  # unrolled: eager code, and programs with a known time dim
        for t in range(1, steps):
            alpha = advance(t, alpha)
    else:  # the time dim known only at run time: one `while` op over the same step
        n = _dim_at_run_time(emit, 0)
        _, alpha = while_loop(lambda t, a: t < n, lambda t, a: (t + 1, advance(t, a)),
                              [n * 0 + 1, alpha])
    last = unsqueeze(l_len * 2, 1)
    end_blank = take_along_axis(alpha, last, axis=1)[:, 0]
    end_label = take_along_axis(alpha, maximum(last - 1, last * 0), axis=1)[:, 0]
    end_label = where(l_len > 0, end_label, full_like(end_label, _IMPOSSIBLE))
    total = logsumexp(stack([end_blank, end_label]), axis=0)             # (B,)
    loss = where(total > _IMPOSSIBLE / 2, -total, full_like(total, np.inf))
    if norm_by_times:
        scaled = loss / cast(maximum(t_len, t_len * 0 + 1), loss.dtype)
        loss = scaled + (loss - scaled).detach()
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _sum(loss)
    return mean(loss / cast(maximum(l_len, l_len * 0 + 1), loss.dtype))

