"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril).

Everything goes through the lower Cholesky factor L (covariance = L L^T):
log_prob by a triangular solve, entropy by log det L, rsample as
loc + L eps, so gradients reach loc and the matrix given."""
from __future__ import annotations

import math

import numpy as np

from ..core import ops as _ops
from ..core.ops.linalg_decomp import cholesky as _cholesky
from ..core.ops.linalg_funcs import triangular_solve as _triangular_solve
from ._util import as_float, dims, like, sample_shape, size_of
from ._distribution import Distribution


def _mT(x):
    n = len(x.shape)
    return _ops.transpose(x, list(range(n - 2)) + [n - 1, n - 2])


def _diag(x):
    return _ops.diagonal(x, 0, -2, -1)


def _tril_solve(low, b):
    """L^{-1} b for lower-triangular L (b: (..., k, m))."""
    return _triangular_solve(low, b, upper=False)


class MultivariateNormal(Distribution):
    """N(loc, Sigma) over the last dim of `loc`; give exactly one of the
    covariance matrix, the precision matrix, or the lower Cholesky factor."""

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 name=None):
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("MultivariateNormal: give exactly one of covariance_matrix, "
                             "precision_matrix, scale_tril")
        mat = next(m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None)
        loc, mat = as_float(loc), as_float(mat)
        wide = max(np.dtype(loc.dtype), np.dtype(mat.dtype), key=lambda d: d.itemsize)
        loc, mat = as_float(loc, wide), as_float(mat, wide)
        if len(loc.shape) < 1 or len(mat.shape) < 2:
            raise ValueError("MultivariateNormal: loc must be at least 1-D and the matrix at "
                             "least 2-D")
        if scale_tril is not None:
            self.scale_tril = _ops.tril(mat)
        elif covariance_matrix is not None:
            self.scale_tril = _cholesky(mat)
        else:
            # Sigma = P^{-1}: its Cholesky factor from P's inverse
            self.scale_tril = _cholesky(_ops.inverse(mat))
        self._matrix = mat
        self._kind = ("scale_tril", "covariance_matrix", "precision_matrix")[
            [scale_tril is not None, covariance_matrix is not None,
             precision_matrix is not None].index(True)]
        k = loc.shape[-1]
        zeros = _ops.zeros_like(_ops.sum(self.scale_tril, -1))  # batch + (k,)
        self.loc = loc + zeros
        self.scale_tril = self.scale_tril + _ops.unsqueeze(_ops.zeros_like(self.loc), -1)
        self.name = name or "MultivariateNormal"
        super().__init__(tuple(self.loc.shape[:-1]), (k,))

    @property
    def covariance_matrix(self):
        if self._kind == "covariance_matrix":
            return self._matrix
        return _ops.matmul(self.scale_tril, _mT(self.scale_tril))

    @property
    def precision_matrix(self):
        if self._kind == "precision_matrix":
            return self._matrix
        return _ops.inverse(self.covariance_matrix)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return _ops.sum(self.scale_tril * self.scale_tril, -1)

    def rsample(self, shape=()):
        shape = sample_shape(shape, "MultivariateNormal.rsample")
        eps = _ops.randn(shape + dims(self.loc), np.dtype(self.loc.dtype).name)
        return self.loc + _ops.squeeze(_ops.matmul(self.scale_tril, _ops.unsqueeze(eps, -1)),
                                       -1)

    def sample(self, shape=()):
        return _ops.detach(self.rsample(shape))

    def _half_log_det(self):
        return _ops.sum(_ops.log(_diag(self.scale_tril)), -1)

    def log_prob(self, value):
        value = like(value, self.loc)
        diff = value - self.loc
        low = self.scale_tril
        extra = len(diff.shape) - len(low.shape) + 1
        if extra > 0:  # sample dims in front: broadcast the factor to them
            low = _ops.expand(low, dims(diff) + dims(low, -1))
        m = _ops.squeeze(_tril_solve(low, _ops.unsqueeze(diff, -1)), -1)
        k = size_of(self.loc, -1)
        return (-0.5 * (k * math.log(2 * math.pi) + _ops.sum(m * m, -1))
                - self._half_log_det())

    def entropy(self):
        k = size_of(self.loc, -1)
        return 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
