"""Paddle's `nn.AdaptiveLogSoftmaxWithLoss` and
`F.adaptive_log_softmax_with_loss` (Grave et al.'s adaptive softmax, as
PyTorch defines it): the frequent classes (below `cutoffs[0]`) and one
logit per tail cluster share the head; a class of cluster i scores
`log p(cluster i) + log p(class | cluster i)`, its cluster's projection
and output layers giving the second term.

Every cluster is evaluated for every row and the row's own term picked by
masks (no data-dependent row subsets), so the shapes are static, the
values and gradients are those of evaluating only the rows that need a
cluster, and it converts to a program, xla and ONNX as its ops do. A label
outside [0, n_classes) fails an assertion, eagerly and at run time."""
from __future__ import annotations

from ..core.dispatch import bind
from ..core.ops import (argmax, cast, concat, logical_and, matmul, mean, reshape, take_along_axis,
                        unsqueeze, where)
from ..core.ops._base import lift
from ..core.ops.nn_ops import log_softmax
from .layer import Layer, LayerList
from .layers import Linear

__all__ = ["adaptive_log_softmax_with_loss", "AdaptiveLogSoftmaxWithLoss"]


def _linear(x, w, b=None):
    out = matmul(x, w)
    return out if b is None else out + b


def _tail_logprob(x, tail):
    proj, out = tail
    return log_softmax(_linear(_linear(x, proj), out), axis=1)


def adaptive_log_softmax_with_loss(input, label, head_weight, tail_weights, cutoffs,
                                   head_bias=None, name=None):
    """(output, loss): `output[n]` the log probability of `label[n]`, `loss`
    the mean of `-output`. `cutoffs` ends with the class count (the layer's
    `cutoffs + [n_classes]`); `head_weight` is `[in, cutoffs[0] +
    n_clusters]`, `tail_weights[i]` the pair `[in, hsz_i]`, `[hsz_i, osz_i]`."""
    x, label = lift(input), cast(lift(label), "int64")
    cutoffs = [int(c) for c in cutoffs]
    if len(x.shape) != 2 or len(label.shape) != 1:
        raise ValueError(f"adaptive_log_softmax_with_loss: input must be [N, in_features] and "
                         f"label [N], got {list(x.shape)} and {list(label.shape)}")
    if len(tail_weights) != len(cutoffs) - 1:
        raise ValueError(f"adaptive_log_softmax_with_loss: {len(tail_weights)} tail weight "
                         f"pairs for {len(cutoffs) - 1} clusters")
    shortlist, n_classes = cutoffs[0], cutoffs[-1]
    bind("assert", logical_and(label >= 0, label < n_classes),
         message=f"adaptive_log_softmax_with_loss: label values must be in [0, {n_classes - 1}]")
    head_logprob = log_softmax(_linear(x, lift(head_weight), head_bias), axis=1)
    in_head = label < shortlist
    head_index = where(in_head, label, label * 0)
    own = cast(label * 0, x.dtype)  # the row's in-cluster log probability (0 in the head)
    bounds = [0] + cutoffs
    for i, tail in enumerate(tail_weights, start=1):
        low, high = bounds[i], bounds[i + 1]
        member = logical_and(label >= low, label < high)
        relative = where(member, label - low, label * 0)
        local = take_along_axis(_tail_logprob(x, tail), unsqueeze(relative, 1), 1)
        own = where(member, reshape(local, [-1]), own)
        head_index = where(member, label * 0 + (shortlist + i - 1), head_index)
    output = own + reshape(take_along_axis(head_logprob, unsqueeze(head_index, 1), 1), [-1])
    return output, mean(-output)


class AdaptiveLogSoftmaxWithLoss(Layer):
    """Adaptive softmax over `n_classes` with clusters split at `cutoffs`
    (increasing, between 1 and n_classes - 1); cluster i projects to
    `in_features // div_value ** (i + 1)` features. `forward(input, label)`
    gives (output, loss); `log_prob(input)` all log probabilities;
    `predict(input)` the most probable class."""

    def __init__(self, in_features, n_classes, cutoffs, weight_attr=None, bias_attr=None,
                 div_value=4.0, head_bias=False, name=None):
        super().__init__(name)
        cutoffs = [int(c) for c in cutoffs]
        if (cutoffs != sorted(cutoffs) or not cutoffs or min(cutoffs) <= 0
                or max(cutoffs) > n_classes - 1 or len(set(cutoffs)) != len(cutoffs)):
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs must be a sorted sequence of "
                             "unique positive ints, each below n_classes - 1")
        self.in_features, self.n_classes = int(in_features), int(n_classes)
        self.cutoffs = cutoffs + [self.n_classes]
        self.div_value = float(div_value)
        self.shortlist_size, self.n_clusters = self.cutoffs[0], len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, weight_attr=weight_attr,
                           bias_attr=bias_attr if head_bias else False)
        tails = []
        for i in range(self.n_clusters):
            hsz = int(self.in_features // (self.div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            tails.append(LayerList([Linear(self.in_features, hsz, weight_attr=weight_attr,
                                           bias_attr=False),
                                    Linear(hsz, osz, weight_attr=weight_attr,
                                           bias_attr=False)]))
        self.tail = LayerList(tails)

    def _tail_weights(self):
        return [(t[0].weight, t[1].weight) for t in self.tail]

    def forward(self, input, label):
        return adaptive_log_softmax_with_loss(input, label, self.head.weight,
                                              self._tail_weights(), self.cutoffs,
                                              self.head.bias)

    def log_prob(self, input):
        """[N, n_classes] log probabilities of every class."""
        x = lift(input)
        head = log_softmax(_linear(x, self.head.weight, self.head.bias), axis=1)
        parts = [head[:, :self.shortlist_size]]
        for i, tail in enumerate(self._tail_weights()):
            cluster = head[:, self.shortlist_size + i:self.shortlist_size + i + 1]
            parts.append(_tail_logprob(x, tail) + cluster)
        return concat(parts, axis=1)

    def predict(self, input):
        """[N] the class of highest probability."""
        return argmax(self.log_prob(input), axis=1)
