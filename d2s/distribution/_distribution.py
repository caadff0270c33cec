"""The base class of every distribution (Paddle's `paddle.distribution.Distribution`).

A distribution is a plain Python object holding parameter tensors; each
method is a composite of d2s ops, so it works eagerly and in converted code
alike. Samples come from d2s's random ops (`d2s.seed` seeds them; in a
converted function they are drawn afresh on every run)."""
from __future__ import annotations

from ..core import ops as _ops


class Distribution:
    """Shapes: a sample of `sample(shape)` has shape
    `shape + batch_shape + event_shape`; `log_prob` reduces the event dims."""

    def __init__(self, batch_shape=(), event_shape=()):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)

    @property
    def batch_shape(self):
        """The shape of the batch of independent distributions (a tuple)."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of one draw of one distribution (a tuple)."""
        return self._event_shape

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} has no closed-form mean")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} has no closed-form variance")

    @property
    def stddev(self):
        """sqrt(variance) (torch's name)."""
        return _ops.sqrt(self.variance)

    def sample(self, shape=()):
        """Draws of shape `shape + batch_shape + event_shape`, without gradient."""
        raise NotImplementedError(f"{type(self).__name__}.sample is not implemented")

    def rsample(self, shape=()):
        """Reparameterized draws: gradients flow to the parameters."""
        raise NotImplementedError(
            f"{type(self).__name__}.rsample: this distribution has no reparameterized "
            "sampler; use sample() (no gradient through the draw) or a score-function "
            "estimator with log_prob")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__}.entropy is not implemented")

    def log_prob(self, value):
        raise NotImplementedError(f"{type(self).__name__}.log_prob is not implemented")

    def prob(self, value):
        """The density (or mass) at `value`: exp(log_prob(value))."""
        return _ops.exp(self.log_prob(value))

    def probs(self, value):
        """Paddle's older name of `prob`."""
        return self.prob(value)

    def kl_divergence(self, other):
        """KL(self || other), by the table of `register_kl`."""
        from ._kl import kl_divergence
        return kl_divergence(self, other)

    def _extend_shape(self, sample_shape):
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def __repr__(self):
        return (f"{type(self).__name__}(batch_shape={list(self._batch_shape)}, "
                f"event_shape={list(self._event_shape)})")
