"""StudentT(df, loc, scale): heavy-tailed; draws are loc + scale * Z / sqrt(V / df)
with Z standard normal and V ~ Chi2(df) (the Gamma sampler; rsample's
gradient reaches df implicitly, loc and scale directly)."""
from __future__ import annotations

import math

import numpy as np

from ..core import ops as _ops
from ._util import check, dims, like, params, sample_shape
from ._distribution import Distribution
from ._gamma import _rsample_gamma


class StudentT(Distribution):

    def __init__(self, df, loc, scale, name=None):
        self.df, self.loc, self.scale = params(df, loc, scale)
        check("StudentT", "df", self.df, lambda v: v > 0, "positive")
        check("StudentT", "scale", self.scale, lambda v: v > 0, "positive")
        self.name = name or "StudentT"
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self):
        """loc where df > 1, nan elsewhere."""
        return _ops.where(_ops.greater_than(self.df, 1.0), self.loc,
                          _ops.full_like(self.loc, np.nan))

    @property
    def variance(self):
        """scale**2 df / (df - 2) where df > 2, inf where 1 < df <= 2, nan elsewhere."""
        df = self.df
        finite = self.scale * self.scale * df / _ops.where(_ops.greater_than(df, 2.0), df - 2.0,
                                                           _ops.ones_like(df))
        return _ops.where(_ops.greater_than(df, 2.0), finite,
                          _ops.where(_ops.greater_than(df, 1.0), _ops.full_like(df, np.inf),
                                     _ops.full_like(df, np.nan)))

    def sample(self, shape=()):
        return _ops.detach(self.rsample(shape))

    def rsample(self, shape=()):
        shape = sample_shape(shape, "StudentT.rsample")
        dt = np.dtype(self.loc.dtype).name
        z = _ops.randn(shape + dims(self.loc), dt)
        v = 2.0 * _rsample_gamma(0.5 * self.df, shape)
        return self.loc + self.scale * z * _ops.rsqrt(v / self.df)

    def log_prob(self, value):
        value = like(value, self.loc)
        df = self.df
        z = (value - self.loc) / self.scale
        return (_ops.lgamma(0.5 * (df + 1.0)) - _ops.lgamma(0.5 * df)
                - 0.5 * _ops.log(df * math.pi) - _ops.log(self.scale)
                - 0.5 * (df + 1.0) * _ops.log1p(z * z / df))

    def entropy(self):
        df = self.df
        lbeta = _ops.lgamma(0.5 * df) + math.lgamma(0.5) - _ops.lgamma(0.5 * (df + 1.0))
        return (_ops.log(self.scale)
                + 0.5 * (df + 1.0) * (_ops.digamma(0.5 * (df + 1.0)) - _ops.digamma(0.5 * df))
                + 0.5 * _ops.log(df) + lbeta)
