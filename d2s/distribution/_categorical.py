"""Categorical and Multinomial.

Paddle's `Categorical(logits)` reads its argument two ways, and d2s keeps
both: `probs`, `log_prob` and `sample` normalize it by its sum (as
unnormalized probabilities: `logits / logits.sum(-1)`), while `entropy` and
`kl_divergence` take its softmax (as logits). Pass non-negative weights
(e.g. `softmax(scores)`) to make the two agree."""
from __future__ import annotations

import numpy as np

from ..core import ops as _ops
from ._util import check, dims, params, sample_shape
from ._distribution import Distribution


def _dt(x):
    return np.dtype(x.dtype).name


class Categorical(Distribution):
    """A draw of an index in [0, K) for the last dim (K) of `logits`."""

    def __init__(self, logits, name=None):
        (self.logits,) = params(logits)
        self.name = name or "Categorical"
        self._prob = self.logits / _ops.sum(self.logits, -1, keepdim=True)
        super().__init__(tuple(self.logits.shape[:-1]))

    def sample(self, shape=()):
        """int64 indices of shape `shape + batch_shape`, drawn with the probabilities
        logits / sum(logits)."""
        shape = sample_shape(shape, "Categorical.sample")
        n = int(np.prod(shape)) if shape else 1
        k = dims(self.logits, -1)
        batch = dims(self.logits, 0, -1)
        flat = _ops.reshape(_ops.detach(self._prob), [-1] + k)
        idx = _ops.multinomial(flat, n, True)  # (prod(batch), n)
        idx = _ops.transpose(idx, [1, 0])
        return _ops.reshape(idx, shape + batch)

    def _softmax_parts(self):
        logits = self.logits - _ops.max(self.logits, -1, keepdim=True)
        z = _ops.sum(_ops.exp(logits), -1, keepdim=True)
        return logits, z

    def entropy(self):
        """Of softmax(logits) (Paddle's)."""
        logits, z = self._softmax_parts()
        prob = _ops.exp(logits) / z
        return -_ops.sum(prob * (logits - _ops.log(z)), -1)

    def kl_divergence(self, other):
        """KL(softmax(self.logits) || softmax(other.logits)), the last dim kept (Paddle's)."""
        if not isinstance(other, Categorical):
            return super().kl_divergence(other)
        logits, z = self._softmax_parts()
        o_logits, o_z = other._softmax_parts()
        prob = _ops.exp(logits) / z
        return _ops.sum(prob * (logits - _ops.log(z) - o_logits + _ops.log(o_z)), -1,
                        keepdim=True)

    def probs(self, value):
        """logits / sum(logits) at the categories `value`. With a batch of
        distributions, a 1-D `value` is read for every distribution; else
        value's leading dims match the batch."""
        value = _ops.cast(value, "int64") if np.dtype(value.dtype).kind != "i" else value
        if len(self._prob.shape) == 1:
            return _ops.reshape(_ops.gather(self._prob, _ops.reshape(value, [-1])),
                                dims(value))
        if len(value.shape) == 1:
            value = _ops.reshape(value, [1] * (len(self._prob.shape) - 1) + [-1])
            value = _ops.expand(value, dims(self._prob, 0, -1) + dims(value, -1))
        return _ops.take_along_axis(self._prob, value, -1)

    prob = probs

    def log_prob(self, value):
        return _ops.log(self.probs(value))


class Multinomial(Distribution):
    """Counts of `total_count` draws among the K categories of `probs` (last dim)."""

    def __init__(self, total_count, probs, name=None):
        if not isinstance(total_count, (int, np.integer)) or isinstance(total_count, bool) \
                or total_count < 1:
            raise ValueError(f"Multinomial: total_count must be a positive int, got "
                             f"{total_count!r}")
        self.total_count = int(total_count)
        (probs,) = params(probs)
        check("Multinomial", "probs", probs, lambda v: v >= 0, "non-negative")
        self.probs = probs / _ops.sum(probs, -1, keepdim=True)
        self.name = name or "Multinomial"
        super().__init__(tuple(probs.shape[:-1]), tuple(probs.shape[-1:]))

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def variance(self):
        return self.total_count * self.probs * (1.0 - self.probs)

    def sample(self, shape=()):
        shape = sample_shape(shape, "Multinomial.sample")
        n = int(np.prod(shape)) if shape else 1
        k = dims(self.probs, -1)
        batch = dims(self.probs, 0, -1)
        flat = _ops.reshape(_ops.detach(self.probs), [-1] + k)
        idx = _ops.multinomial(flat, n * self.total_count, True)  # (B, n * count)
        kk = self.probs.shape[-1]
        counts = _ops.sum(_ops.one_hot(_ops.reshape(idx, [-1, n, self.total_count]), kk), -2)
        counts = _ops.transpose(counts, [1, 0, 2])  # (n, B, K)
        return _ops.cast(_ops.reshape(counts, shape + batch + k), _dt(self.probs))

    def log_prob(self, value):
        from ._discrete import _xlogy
        value = _ops.cast(value, _dt(self.probs))
        return (float(np.log(np.arange(1, self.total_count + 1)).sum())
                - _ops.sum(_ops.lgamma(value + 1.0), -1)
                + _ops.sum(_xlogy(value, self.probs), -1))

    def entropy(self):
        raise NotImplementedError(
            "Multinomial.entropy: not implemented; estimate it as "
            "-log_prob(sample([n])).mean(0)")
