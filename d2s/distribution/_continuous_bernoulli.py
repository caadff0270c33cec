"""ContinuousBernoulli(probs, lims): the density C(p) p**x (1-p)**(1-x) on [0, 1].

Near p = 1/2 the closed forms of the normalizer, mean and variance divide
0 by 0; for p inside `lims` they are replaced by their Taylor series about
1/2 (and the closed forms are evaluated at a safe p there, so no nan reaches
a gradient)."""
from __future__ import annotations

import math

from ..core import ops as _ops
from ._util import check, like, params
from ._distribution import Distribution
from ._simple import _open_uniform


class ContinuousBernoulli(Distribution):

    def __init__(self, probs, lims=(0.499, 0.501), name=None):
        (self.probs,) = params(probs)
        check("ContinuousBernoulli", "probs", self.probs, lambda v: (v > 0) & (v < 1),
              "in (0, 1)")
        self.lims = (float(lims[0]), float(lims[1]))
        self.name = name or "ContinuousBernoulli"
        super().__init__(tuple(self.probs.shape))

    def _outside(self):
        return _ops.logical_or(_ops.less_equal(self.probs, self.lims[0]),
                               _ops.greater_than(self.probs, self.lims[1]))

    def _safe(self):
        """p outside lims; lims[0] inside (where the Taylor series is used)."""
        return _ops.where(self._outside(), self.probs, _ops.full_like(self.probs, self.lims[0]))

    def _log_norm(self):
        p = self._safe()
        # C(p) = 2 atanh(1 - 2p) / (1 - 2p) = |log(1-p) - log p| / |1 - 2p|
        closed = _ops.log(_ops.abs(_ops.log1p(-p) - _ops.log(p))) - _ops.log(
            _ops.abs(1.0 - 2.0 * p))
        x = (self.probs - 0.5) * (self.probs - 0.5)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _ops.where(self._outside(), closed, taylor)

    @property
    def mean(self):
        p = self._safe()
        closed = p / (2.0 * p - 1.0) + 1.0 / (_ops.log1p(-p) - _ops.log(p))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x * x) * x
        return _ops.where(self._outside(), closed, taylor)

    @property
    def variance(self):
        p = self._safe()
        d = _ops.log1p(-p) - _ops.log(p)
        closed = p * (p - 1.0) / ((1.0 - 2.0 * p) * (1.0 - 2.0 * p)) + 1.0 / (d * d)
        x = (self.probs - 0.5) * (self.probs - 0.5)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return _ops.where(self._outside(), closed, taylor)

    def icdf(self, value):
        value = like(value, self.probs)
        p = self._safe()
        closed = (_ops.log1p(-p + value * (2.0 * p - 1.0)) - _ops.log1p(-p)) / (
            _ops.log(p) - _ops.log1p(-p))
        return _ops.where(self._outside(), closed, value + _ops.zeros_like(p))

    def cdf(self, value):
        value = like(value, self.probs)
        p = self._safe()
        closed = (_ops.pow(p, value) * _ops.pow(1.0 - p, 1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inside = _ops.where(self._outside(), closed, value + _ops.zeros_like(p))
        return _ops.clip(inside, 0.0, 1.0)

    def rsample(self, shape=()):
        """icdf(u), u uniform in (0, 1): gradients reach probs."""
        return self.icdf(_open_uniform(self.probs, shape, "ContinuousBernoulli.rsample"))

    def sample(self, shape=()):
        return _ops.detach(self.rsample(shape))

    def log_prob(self, value):
        value = like(value, self.probs)
        return (value * _ops.log(self.probs) + (1.0 - value) * _ops.log1p(-self.probs)
                + self._log_norm())

    def entropy(self):
        log0, log1 = _ops.log1p(-self.probs), _ops.log(self.probs)
        return self.mean * (log0 - log1) - self._log_norm() - log0
