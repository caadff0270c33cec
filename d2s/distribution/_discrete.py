"""Discrete families: Bernoulli, Geometric, Poisson, Binomial.

Samples are counts drawn from d2s's uniform (or poisson) draws; they carry no
gradient (no discrete distribution has a reparameterized sample, except
Bernoulli's relaxed rsample, Paddle's)."""
from __future__ import annotations

import numpy as np

from ..core import ops as _ops
from ..core.tensor import Tensor
from ._util import check, dims, like, params, sample_shape
from ._distribution import Distribution
from ._simple import _open_uniform


def _dt(x):
    return np.dtype(x.dtype).name


def _xlogy(x, y):
    """x * log(y), 0 where x == 0 (a certain outcome costs nothing)."""
    zero = _ops.equal(x, 0.0)
    safe_y = _ops.where(zero, _ops.ones_like(y), y)
    return _ops.where(zero, _ops.zeros_like(x * y), x * _ops.log(safe_y))


class Bernoulli(Distribution):
    """1 with probability `probs`, else 0."""

    def __init__(self, probs, name=None):
        (self.probs,) = params(probs)
        check("Bernoulli", "probs", self.probs, lambda v: (v >= 0) & (v <= 1), "in [0, 1]")
        self.name = name or "Bernoulli"
        self.logits = _ops.log(self.probs) - _ops.log1p(-self.probs)
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1.0 - self.probs)

    def sample(self, shape=()):
        shape = sample_shape(shape, "Bernoulli.sample")
        u = _ops.rand(shape + dims(self.probs), _dt(self.probs))
        return _ops.cast(_ops.less_than(u, _ops.detach(self.probs)), _dt(self.probs))

    def rsample(self, shape=(), temperature=1.0):
        """The relaxed (Concrete) sample sigmoid((logits + log u - log(1-u)) / temperature),
        in (0, 1): gradients reach probs (Paddle's Bernoulli.rsample)."""
        u = _open_uniform(self.probs, shape, "Bernoulli.rsample")
        return _ops.sigmoid((self.logits + _ops.log(u) - _ops.log1p(-u)) / temperature)

    def log_prob(self, value):
        value = like(value, self.probs)
        return _xlogy(value, self.probs) + _xlogy(1.0 - value, 1.0 - self.probs)

    def entropy(self):
        p = self.probs
        return -(_xlogy(p, p) + _xlogy(1.0 - p, 1.0 - p))

    def cdf(self, value):
        value = like(value, self.probs)
        zero = _ops.zeros_like(value + self.probs)
        return _ops.where(_ops.less_than(value, 0.0), zero,
                          _ops.where(_ops.less_than(value, 1.0), 1.0 - self.probs + zero,
                                     zero + 1.0))


class Geometric(Distribution):
    """The number of failures before the first success: P(k) = (1-p)**k p, k = 0, 1, ..."""

    def __init__(self, probs, name=None):
        (self.probs,) = params(probs)
        check("Geometric", "probs", self.probs, lambda v: (v > 0) & (v <= 1), "in (0, 1]")
        self.name = name or "Geometric"
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, shape=()):
        """floor(log u / log(1 - p)), u uniform in (0, 1)."""
        u = _open_uniform(self.probs, shape, "Geometric.sample")
        return _ops.detach(_ops.floor(_ops.log(u) / _ops.log1p(-self.probs)))

    def pmf(self, k):
        return _ops.exp(self.log_pmf(k))

    def log_pmf(self, k):
        k = like(k, self.probs)
        return _xlogy(k, 1.0 - self.probs) + _ops.log(self.probs)

    log_prob = log_pmf

    def entropy(self):
        p = self.probs
        return -(_xlogy(1.0 - p, 1.0 - p) + p * _ops.log(p)) / p

    def cdf(self, k):
        k = like(k, self.probs)
        return 1.0 - _ops.pow(1.0 - self.probs, k + 1.0)


class Poisson(Distribution):
    """P(k) = rate**k exp(-rate) / k!, k = 0, 1, ..."""

    def __init__(self, rate, name=None):
        (self.rate,) = params(rate)
        check("Poisson", "rate", self.rate, lambda v: v >= 0, "non-negative")
        self.name = name or "Poisson"
        super().__init__(tuple(self.rate.shape))

    @property
    def mean(self):
        return self.rate

    @property
    def variance(self):
        return self.rate

    def sample(self, shape=()):
        shape = sample_shape(shape, "Poisson.sample")
        rate = _ops.expand(_ops.detach(self.rate), shape + dims(self.rate))
        return _ops.poisson(rate)

    def log_prob(self, value):
        value = like(value, self.rate)
        return _xlogy(value, self.rate) - self.rate - _ops.lgamma(value + 1.0)

    def entropy(self):
        raise NotImplementedError(
            "Poisson.entropy has no closed form; estimate it as -log_prob(sample([n])).mean(0)")


def _known_max(t, what):
    if isinstance(t, Tensor):
        return int(np.max(t.numpy())) if t.size else 0
    raise ValueError(f"{what}: total_count must be known while building (a number or an "
                     "eager tensor), not a value computed in the converted program")


class Binomial(Distribution):
    """The number of successes in `total_count` trials of probability `probs`."""

    def __init__(self, total_count, probs, name=None):
        self.total_count, self.probs = params(total_count, probs)
        check("Binomial", "probs", self.probs, lambda v: (v >= 0) & (v <= 1), "in [0, 1]")
        check("Binomial", "total_count", self.total_count,
              lambda v: (v >= 0) & (v == np.floor(v)), "a non-negative integer")
        self.name = name or "Binomial"
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def variance(self):
        return self.total_count * self.probs * (1.0 - self.probs)

    def sample(self, shape=()):
        """Counts of uniform draws below p among the first total_count of
        max(total_count) draws per element (total_count known while building)."""
        shape = sample_shape(shape, "Binomial.sample")
        n_max = max(_known_max(self.total_count, "Binomial.sample"), 1)
        dt = _dt(self.probs)
        u = _ops.rand(shape + dims(self.probs) + [n_max], dt)
        trial = _ops.arange(0, n_max, 1, dt)
        hit = _ops.logical_and(
            _ops.less_than(u, _ops.unsqueeze(_ops.detach(self.probs), -1)),
            _ops.less_than(trial, _ops.unsqueeze(_ops.detach(self.total_count), -1)))
        return _ops.sum(_ops.cast(hit, dt), -1)

    def log_prob(self, value):
        value = like(value, self.probs)
        n = self.total_count
        log_comb = _ops.lgamma(n + 1.0) - _ops.lgamma(value + 1.0) - _ops.lgamma(n - value + 1.0)
        return log_comb + _xlogy(value, self.probs) + _xlogy(n - value, 1.0 - self.probs)

    def entropy(self):
        """-sum_k P(k) log P(k) over k = 0..max(total_count) (total_count known while building)."""
        n_max = _known_max(self.total_count, "Binomial.entropy")
        k = _ops.reshape(_ops.arange(0, n_max + 1, 1, _dt(self.probs)),
                         [n_max + 1] + [1] * len(self.probs.shape))
        valid = _ops.less_equal(k, self.total_count)
        lp = self.log_prob(_ops.minimum(k, self.total_count))  # k > n: masked below
        p = _ops.where(valid, _ops.exp(lp), _ops.zeros_like(lp))
        return -_ops.sum(_ops.where(valid, p * lp, _ops.zeros_like(lp)), 0)
