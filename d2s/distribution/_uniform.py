"""Uniform(low, high): constant density on [low, high)."""
from __future__ import annotations

import numpy as np

from ..core import ops as _ops
from ._util import check, dims, like, params, sample_shape
from ._distribution import Distribution


class Uniform(Distribution):
    """The uniform distribution on [low, high); low and high broadcast."""

    def __init__(self, low, high, name=None):
        self.low, self.high = params(low, high)
        from ..core.tensor import Tensor
        if isinstance(self.low, Tensor) and isinstance(self.high, Tensor):
            check("Uniform", "high - low", self.high - self.low, lambda v: v > 0, "positive")
        self.name = name or "Uniform"
        super().__init__(tuple(self.low.shape))

    @property
    def mean(self):
        return 0.5 * (self.low + self.high)

    @property
    def variance(self):
        w = self.high - self.low
        return w * w / 12.0

    def rsample(self, shape=()):
        """low + (high - low) * u, u uniform on [0, 1): gradients reach low and high."""
        shape = sample_shape(shape, "Uniform.rsample")
        u = _ops.rand(shape + dims(self.low), np.dtype(self.low.dtype).name)
        return self.low + (self.high - self.low) * u

    def sample(self, shape=(), seed=0):
        return _ops.detach(self.rsample(shape))

    def log_prob(self, value):
        """-log(high - low) inside [low, high), -inf outside."""
        value = like(value, self.low)
        inside = _ops.logical_and(_ops.greater_equal(value, self.low),
                                  _ops.less_than(value, self.high))
        lp = -_ops.log(self.high - self.low) + _ops.zeros_like(value)
        return _ops.where(inside, lp, _ops.full_like(lp, -np.inf))

    def entropy(self):
        return _ops.log(self.high - self.low)
