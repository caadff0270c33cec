"""`d2s.metric`: `accuracy` (Paddle's function, written with d2s ops so that it
runs eagerly and inside converted functions alike) and the stateful metrics
`Accuracy`, `Auc`, `Precision` and `Recall` (host-side numpy, updated between
steps)."""
from __future__ import annotations

import numpy as np

from ..core.ops import (arange, cast, concat, equal, full, maximum, reshape, sum as _sum, unsqueeze,
                        zeros)
from ..core.tensor import Tensor
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


class Metric:
    """Paddle's metric protocol: `update(...)` per batch, `accumulate()` for the
    result so far, `reset()`; `name()`."""

    def __init__(self, name=None):
        self._name = name or type(self).__name__.lower()

    def name(self):
        return self._name

    def compute(self, *args):
        return args


def _np(x):
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


class Accuracy(Metric):
    """Top-k accuracies over all batches seen (`topk` a tuple of k).

    `compute` and `update` are tensor code and the running totals are
    Tensors, so a converted eval step may call both (`metric.update(
    metric.compute(logits, y))`): the totals the step writes into the
    metric are effects of its program, replayed after each run with that
    run's values (DESIGN §4) -- never a build-time value counted once."""

    _d2s_user_state = True  # its totals are watched like a user object's (static.reachable)

    def __init__(self, topk=(1,), name=None):
        super().__init__(name or "acc")
        self.topk = tuple(topk)
        self.reset()

    def compute(self, pred, label):
        """(N, len(topk)) float32 hits of each sample: the label's rank (scores
        above it, then equal scores at lower indices, as a stable sort puts
        them) is below k."""
        pred, label = lift(pred), lift(label)
        label = reshape(label, [-1, 1])
        n_classes = pred.shape[-1]
        classes = reshape(arange(0, n_classes, dtype=label.dtype), [1, n_classes])
        onehot = equal(label, classes)
        own = _sum(pred * cast(onehot, pred.dtype), axis=1, keepdim=True)
        ahead = (pred > own) | ((pred == own) & (classes < label))
        rank = _sum(cast(ahead, "int64"), axis=1, keepdim=True)
        return concat([cast(rank < int(k), "float32") for k in self.topk], axis=1)

    def update(self, correct):
        """Add a batch's hits (from `compute`) to the totals; returns the batch's
        accuracies (a list eagerly, a float32 tensor inside converted code)."""
        correct = cast(lift(np.asarray(correct) if not hasattr(correct, "shape") else correct),
                       "int64")
        if len(correct.shape) == 1:
            correct = reshape(correct, [-1, 1])
        hits = _sum(correct, axis=0)
        n = _sum(cast(correct[:, 0] >= 0, "int64"))  # the batch size, known or not
        self.total = self.total + hits
        self.count = self.count + n
        batch = cast(hits, "float32") / cast(maximum(n, full([], 1, "int64")), "float32")
        return batch.numpy().tolist() if isinstance(batch, Tensor) else batch

    def accumulate(self):
        total, count = _np(self.total), int(_np(self.count))
        res = (total / max(count, 1)).tolist()
        return res[0] if len(self.topk) == 1 else res

    def reset(self):
        self.total = zeros([len(self.topk)], "int64")
        self.count = zeros([], "int64")


class Auc(Metric):
    """Area under the ROC curve (or precision-recall, `curve="PR"`) from
    histograms of the positive-class scores over `num_thresholds + 1` bins."""

    def __init__(self, curve="ROC", num_thresholds=4095, name=None):
        super().__init__(name or "auc")
        if curve not in ("ROC", "PR"):
            raise ValueError(f"Auc: curve must be 'ROC' or 'PR', got {curve!r}")
        self.curve, self.num_thresholds = curve, int(num_thresholds)
        self.reset()

    def update(self, preds, labels):
        """`preds` (N, 2) class probabilities (column 1: positive), or (N,) scores;
        `labels` (N,) or (N, 1) in {0, 1}."""
        preds, labels = _np(preds), _np(labels).reshape(-1)
        score = preds[:, -1] if preds.ndim == 2 else preds.reshape(-1)
        bins = np.clip((score * self.num_thresholds).astype(np.int64), 0, self.num_thresholds)
        pos = labels.astype(bool)
        np.add.at(self._pos, bins[pos], 1)
        np.add.at(self._neg, bins[~pos], 1)

    def accumulate(self):
        # sweep thresholds from high to low: cumulative true / false positives
        tp = np.concatenate([[0.0], np.cumsum(self._pos[::-1])])
        fp = np.concatenate([[0.0], np.cumsum(self._neg[::-1])])
        if tp[-1] == 0 or fp[-1] == 0:
            return 0.0
        if self.curve == "ROC":
            return float(np.sum((fp[1:] - fp[:-1]) * (tp[1:] + tp[:-1]) / 2) / (tp[-1] * fp[-1]))
        precision = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 1.0)
        recall = tp / tp[-1]
        return float(np.sum((recall[1:] - recall[:-1]) * (precision[1:] + precision[:-1]) / 2))

    def reset(self):
        self._pos = np.zeros(self.num_thresholds + 1)
        self._neg = np.zeros(self.num_thresholds + 1)


__all__ += ["Metric", "Accuracy", "Auc"]


def _binary(preds, labels, where):
    """Paddle's binary-metric inputs: `preds` (N,) or (N, 1) probabilities of
    the positive class (rounded at 0.5), `labels` of the same size in {0, 1}."""
    preds, labels = _np(preds).reshape(-1), _np(labels).reshape(-1)
    if preds.shape != labels.shape:
        raise ValueError(f"{where}.update: preds and labels must have the same number of "
                         f"elements, got {preds.size} and {labels.size}")
    return np.floor(preds + 0.5).astype(np.int64) == 1, labels.astype(np.int64) == 1


class Precision(Metric):
    """Binary precision over all batches seen: true positives / predicted
    positives (0.0 before any positive prediction)."""

    def __init__(self, name="precision", *args, **kwargs):
        super().__init__(name)
        self.reset()

    def update(self, preds, labels):
        pred, label = _binary(preds, labels, "Precision")
        self.tp += int(np.sum(pred & label))
        self.fp += int(np.sum(pred & ~label))

    def accumulate(self):
        positives = self.tp + self.fp
        return float(self.tp) / positives if positives else 0.0

    def reset(self):
        self.tp = self.fp = 0


class Recall(Metric):
    """Binary recall over all batches seen: true positives / actual positives
    (0.0 before any positive label)."""

    def __init__(self, name="recall", *args, **kwargs):
        super().__init__(name)
        self.reset()

    def update(self, preds, labels):
        pred, label = _binary(preds, labels, "Recall")
        self.tp += int(np.sum(pred & label))
        self.fn += int(np.sum(~pred & label))

    def accumulate(self):
        positives = self.tp + self.fn
        return float(self.tp) / positives if positives else 0.0

    def reset(self):
        self.tp = self.fn = 0


__all__ += ["Precision", "Recall"]
