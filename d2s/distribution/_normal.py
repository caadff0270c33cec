"""Normal(loc, scale) and LogNormal(loc, scale) (the exp of a Normal)."""
from __future__ import annotations

import math

import numpy as np

from ..core import ops as _ops
from ._util import check, dims, like, params, sample_shape
from ._distribution import Distribution

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Normal(Distribution):
    """The normal distribution N(loc, scale**2); loc and scale broadcast."""

    def __init__(self, loc, scale, name=None):
        self.loc, self.scale = params(loc, scale)
        check("Normal", "scale", self.scale, lambda v: v > 0, "positive")
        self.name = name or "Normal"
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return self.scale * self.scale

    @property
    def stddev(self):
        return self.scale

    def rsample(self, shape=()):
        """loc + scale * eps with eps standard normal: gradients reach loc and scale."""
        shape = sample_shape(shape, "Normal.rsample")
        eps = _ops.randn(shape + dims(self.loc), np.dtype(self.loc.dtype).name)
        return self.loc + self.scale * eps

    def sample(self, shape=(), seed=0):
        return _ops.detach(self.rsample(shape))

    def log_prob(self, value):
        value = like(value, self.loc)
        z = (value - self.loc) / self.scale
        return -0.5 * z * z - _ops.log(self.scale) - _HALF_LOG_2PI

    def entropy(self):
        return 0.5 + _HALF_LOG_2PI + _ops.log(self.scale)

    def cdf(self, value):
        value = like(value, self.loc)
        return 0.5 * (1.0 + _ops.erf((value - self.loc) / (self.scale * math.sqrt(2.0))))

    def icdf(self, value):
        value = like(value, self.loc)
        return self.loc + self.scale * math.sqrt(2.0) * _ops.erfinv(2.0 * value - 1.0)


class LogNormal(Distribution):
    """exp(X) for X ~ Normal(loc, scale): positive, with log-scale parameters."""

    def __init__(self, loc, scale, name=None):
        self._base = Normal(loc, scale)
        self.loc, self.scale = self._base.loc, self._base.scale
        self.name = name or "LogNormal"
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self):
        return _ops.exp(self.loc + 0.5 * self.scale * self.scale)

    @property
    def variance(self):
        s2 = self.scale * self.scale
        return _ops.expm1(s2) * _ops.exp(2.0 * self.loc + s2)

    def rsample(self, shape=()):
        return _ops.exp(self._base.rsample(shape))

    def sample(self, shape=(), seed=0):
        return _ops.detach(self.rsample(shape))

    def log_prob(self, value):
        value = like(value, self.loc)
        log_v = _ops.log(value)
        return self._base.log_prob(log_v) - log_v

    def entropy(self):
        return self._base.entropy() + self.loc
