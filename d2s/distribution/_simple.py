"""Location-scale and rate families with closed forms and inverse-CDF
samplers: Laplace, Gumbel, Cauchy, Exponential. Each rsample is a
deterministic function of uniform draws, so gradients reach the parameters."""
from __future__ import annotations

import math

import numpy as np

from ..core import ops as _ops
from ._util import check, dims, like, params, sample_shape
from ._distribution import Distribution

_EULER = 0.57721566490153286


def _open_uniform(ref, shape, name):
    """Uniform draws in (0, 1) (never 0: the samplers take its log), ref's dtype
    and batch shape after the sample shape."""
    shape = sample_shape(shape, name)
    dt = np.dtype(ref.dtype).name
    tiny = float(np.finfo(np.dtype(dt)).tiny)
    return _ops.clip(_ops.rand(shape + dims(ref), dt), tiny, 1.0 - float(np.finfo(dt).epsneg))


class _LocScale(Distribution):
    def __init__(self, loc, scale, name):
        self.loc, self.scale = params(loc, scale)
        check(name, "scale", self.scale, lambda v: v > 0, "positive")
        self.name = name
        super().__init__(tuple(self.loc.shape))

    def sample(self, shape=(), seed=0):
        return _ops.detach(self.rsample(shape))


class Laplace(_LocScale):
    """Density exp(-|x - loc| / scale) / (2 scale)."""

    def __init__(self, loc, scale, name=None):
        super().__init__(loc, scale, name or "Laplace")

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2.0 * self.scale * self.scale

    @property
    def stddev(self):
        return math.sqrt(2.0) * self.scale

    def rsample(self, shape=()):
        u = 2.0 * _open_uniform(self.loc, shape, "Laplace.rsample") - 1.0
        return self.loc - self.scale * _ops.sign(u) * _ops.log1p(-_ops.abs(u))

    def log_prob(self, value):
        value = like(value, self.loc)
        return -_ops.log(2.0 * self.scale) - _ops.abs(value - self.loc) / self.scale

    def entropy(self):
        return 1.0 + _ops.log(2.0 * self.scale)

    def cdf(self, value):
        value = like(value, self.loc)
        z = (value - self.loc) / self.scale
        return 0.5 - 0.5 * _ops.sign(z) * _ops.expm1(-_ops.abs(z))

    def icdf(self, value):
        value = like(value, self.loc)
        t = value - 0.5
        return self.loc - self.scale * _ops.sign(t) * _ops.log1p(-2.0 * _ops.abs(t))


class Gumbel(_LocScale):
    """Density exp(-(z + exp(-z))) / scale, z = (x - loc) / scale."""

    def __init__(self, loc, scale, name=None):
        super().__init__(loc, scale, name or "Gumbel")

    @property
    def mean(self):
        return self.loc + self.scale * _EULER

    @property
    def variance(self):
        return (math.pi ** 2 / 6.0) * self.scale * self.scale

    def rsample(self, shape=()):
        u = _open_uniform(self.loc, shape, "Gumbel.rsample")
        return self.loc - self.scale * _ops.log(-_ops.log(u))

    def log_prob(self, value):
        value = like(value, self.loc)
        z = (value - self.loc) / self.scale
        return -(z + _ops.exp(-z)) - _ops.log(self.scale)

    def entropy(self):
        return _ops.log(self.scale) + 1.0 + _EULER

    def cdf(self, value):
        value = like(value, self.loc)
        return _ops.exp(-_ops.exp(-(value - self.loc) / self.scale))

    def icdf(self, value):
        value = like(value, self.loc)
        return self.loc - self.scale * _ops.log(-_ops.log(value))


class Cauchy(_LocScale):
    """Density 1 / (pi scale (1 + z**2)); it has no mean or variance."""

    def __init__(self, loc, scale, name=None):
        super().__init__(loc, scale, name or "Cauchy")

    @property
    def mean(self):
        raise ValueError("Cauchy distribution has no mean")

    @property
    def variance(self):
        raise ValueError("Cauchy distribution has no variance")

    @property
    def stddev(self):
        raise ValueError("Cauchy distribution has no stddev")

    def rsample(self, shape=()):
        u = _open_uniform(self.loc, shape, "Cauchy.rsample")
        return self.loc + self.scale * _ops.tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        value = like(value, self.loc)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - _ops.log(self.scale) - _ops.log1p(z * z)

    def entropy(self):
        return math.log(4.0 * math.pi) + _ops.log(self.scale)

    def cdf(self, value):
        value = like(value, self.loc)
        return _ops.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        value = like(value, self.loc)
        return self.loc + self.scale * _ops.tan(math.pi * (value - 0.5))


class Exponential(Distribution):
    """Density rate * exp(-rate * x) on x >= 0."""

    def __init__(self, rate, name=None):
        (self.rate,) = params(rate)
        check("Exponential", "rate", self.rate, lambda v: v > 0, "positive")
        self.name = name or "Exponential"
        super().__init__(tuple(self.rate.shape))

    @property
    def mean(self):
        return 1.0 / self.rate

    @property
    def variance(self):
        return 1.0 / (self.rate * self.rate)

    def rsample(self, shape=()):
        u = _open_uniform(self.rate, shape, "Exponential.rsample")
        return -_ops.log(u) / self.rate

    def sample(self, shape=(), seed=0):
        return _ops.detach(self.rsample(shape))

    def log_prob(self, value):
        value = like(value, self.rate)
        lp = _ops.log(self.rate) - self.rate * value
        return _ops.where(_ops.less_than(value, 0.0), _ops.full_like(lp, -np.inf), lp)

    def entropy(self):
        return 1.0 - _ops.log(self.rate)

    def cdf(self, value):
        value = like(value, self.rate)
        return -_ops.expm1(-self.rate * value)

    def icdf(self, value):
        value = like(value, self.rate)
        return -_ops.log1p(-value) / self.rate
