"""LKJCholesky(dim, concentration): Cholesky factors L of dim x dim correlation
matrices with density proportional to det(L L^T) ** (concentration - 1)
(the LKJ distribution, as a prior on correlations in Bayesian models).

Draws use the onion method: row i of L is a point of the unit (i+1)-ball,
its radius squared a Beta draw, its direction a normalized normal draw, and
the diagonal what is left (1 - |w|^2) ** 0.5. Paddle's other
`sample_method`, "cvine", is refused by name."""
from __future__ import annotations

import math

import numpy as np

from ..core import ops as _ops
from ._distribution import Distribution
from ._gamma import Beta
from ._util import as_float, check, dims, like, params, sample_shape


class LKJCholesky(Distribution):

    def __init__(self, dim=2, concentration=1.0, sample_method="onion", name=None):
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 2:
            raise ValueError(f"LKJCholesky: dim must be an int >= 2, got {dim!r}")
        if sample_method != "onion":
            raise NotImplementedError(
                f"LKJCholesky: sample_method={sample_method!r} is not implemented; use "
                "sample_method='onion' (the same distribution)")
        self.dim = int(dim)
        (self.concentration,) = params(concentration)
        check("LKJCholesky", "concentration", self.concentration, lambda v: v > 0, "positive")
        self.sample_method = sample_method
        self.name = name or "LKJCholesky"
        # the squared radius of row i + 1 (i = 0 .. dim-2): Beta(i + 1/2, c + (dim - 2 - i) / 2)
        dt = np.dtype(self.concentration.dtype).name
        offset = as_float(np.arange(self.dim - 1, dtype=np.float64), dt)
        c = _ops.unsqueeze(self.concentration, -1)
        marginal = c + 0.5 * (self.dim - 2)
        self._radius = Beta(offset + 0.5, marginal - 0.5 * offset)
        super().__init__(tuple(self.concentration.shape), (self.dim, self.dim))

    def sample(self, shape=()):
        shape = sample_shape(shape, "LKJCholesky.sample")
        dt = np.dtype(self.concentration.dtype).name
        y = _ops.unsqueeze(self._radius.sample(shape), -1)  # (..., dim - 1, 1)
        normal = _ops.tril(_ops.randn(shape + dims(self.concentration)
                                      + [self.dim, self.dim], dt), -1)
        rows = _ops.slice(normal, [len(normal.shape) - 2], [1], [self.dim])  # rows 1 .. dim-1
        direction = rows / _ops.sqrt(_ops.sum(rows * rows, -1, keepdim=True))
        w = _ops.sqrt(y) * direction
        w = _ops.concat([_ops.zeros_like(_ops.slice(normal, [len(normal.shape) - 2], [0], [1])),
                         w], -2)
        tiny = float(np.finfo(np.dtype(dt)).tiny)
        diag = _ops.sqrt(_ops.clip(1.0 - _ops.sum(w * w, -1), tiny, 1.0))
        return _ops.detach(w + _ops.diag_embed(diag))

    def log_prob(self, value):
        value = like(value, self.concentration)
        diag = _ops.slice(_ops.diagonal(value, 0, -2, -1), [len(value.shape) - 2], [1],
                          [self.dim])
        order = as_float(np.arange(2, self.dim + 1, dtype=np.float64),
                         np.dtype(self.concentration.dtype))
        order = 2.0 * (_ops.unsqueeze(self.concentration, -1) - 1.0) + self.dim - order
        unnormalized = _ops.sum(order * _ops.log(diag), -1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        # multivariate log-gamma of order dm1 at alpha - 1/2
        mvlgamma = 0.25 * dm1 * (dm1 - 1) * math.log(math.pi)
        for j in range(dm1):
            mvlgamma = mvlgamma + _ops.lgamma(alpha - 0.5 - 0.5 * j)
        normalizer = 0.5 * dm1 * math.log(math.pi) + mvlgamma - dm1 * _ops.lgamma(alpha)
        return unnormalized - normalizer
