"""Gamma(concentration, rate), Beta(alpha, beta), Dirichlet(concentration).

Their draws come from `_standard_gamma`, Marsaglia and Tsang's method written
with d2s ops: a fixed number of proposals (normal and uniform draws) per
element, the first accepted one kept. For shape >= 1 a proposal is accepted
with probability above 0.95, so all _PROPOSALS fail with probability below
1e-13 (then the last proposal is used); shape < 1 is boosted from shape + 1.
Beta and Dirichlet are ratios of Gamma draws.

rsample differentiates a draw x by implicit reparameterization (as torch
and JAX do): dx/dalpha = -(dCDF/dalpha) / density at the drawn x
(`standard_gamma_grad`), joined to the draw as x + (alpha - detach(alpha)) *
dx/dalpha, whose value is x. (A gradient through the accepted proposal
alone would be biased: acceptance depends on alpha too.)"""
from __future__ import annotations

import numpy as np

from ..core import ops as _ops
from ..core.ops.gamma_grad import standard_gamma_grad
from ._util import check, dims, like, params, sample_shape, size_of
from ._distribution import Distribution

_PROPOSALS = 10


def _dt(x):
    return np.dtype(x.dtype).name


def _standard_gamma(alpha, shape):
    """Gamma(alpha, 1) draws of shape `shape + alpha.shape` (float64 inside,
    alpha's dtype out); no gradient."""
    dt = _dt(alpha)
    a = _ops.cast(_ops.detach(alpha), "float64")
    out_shape = list(shape) + dims(alpha)
    a = _ops.expand(a, out_shape)
    small = _ops.less_than(a, 1.0)
    a1 = _ops.where(small, a + 1.0, a)
    d = a1 - 1.0 / 3.0
    c = 1.0 / _ops.sqrt(9.0 * d)
    z = _ops.randn([_PROPOSALS] + out_shape, "float64")
    u = _ops.rand([_PROPOSALS] + out_shape, "float64")
    v = 1.0 + c * z
    positive = _ops.greater_than(v, 0.0)
    v = _ops.where(positive, v * v * v, _ops.ones_like(v))
    log_u = _ops.log(_ops.clip(u, 1e-300, 1.0))
    accept = _ops.logical_and(positive, _ops.less_than(
        log_u, 0.5 * z * z + d - d * v + d * _ops.log(v)))
    # the first accepted proposal; the last one if none is
    accept = _ops.logical_or(accept, _ops.reshape(
        _ops.arange(0, _PROPOSALS, 1, "int64") == _PROPOSALS - 1,
        [_PROPOSALS] + [1] * len(out_shape)))
    first = _ops.argmax(_ops.cast(accept, "int32"), 0, keepdim=True)
    x = _ops.squeeze(_ops.take_along_axis(d * v, first, 0), 0)
    boost = _ops.pow(_ops.clip(_ops.rand(out_shape, "float64"), 1e-300, 1.0), 1.0 / a)
    x = _ops.where(small, x * boost, x)
    tiny = float(np.finfo(np.dtype(dt)).tiny)
    return _ops.clip(_ops.cast(x, dt), tiny, float(np.finfo(np.dtype(dt)).max))


def _rsample_gamma(alpha, shape):
    """Gamma(alpha, 1) draws whose gradient reaches alpha (implicitly)."""
    x = _standard_gamma(alpha, shape)
    fixed = _ops.detach(alpha)
    slope = _ops.detach(standard_gamma_grad(x, fixed))
    return x + (alpha - fixed) * slope


def _lbeta(a, b):
    return _ops.lgamma(a) + _ops.lgamma(b) - _ops.lgamma(a + b)


class Gamma(Distribution):
    """Density rate**a x**(a-1) exp(-rate x) / Gamma(a), a = concentration."""

    def __init__(self, concentration, rate, name=None):
        self.concentration, self.rate = params(concentration, rate)
        check(name or "Gamma", "concentration", self.concentration, lambda v: v > 0, "positive")
        check(name or "Gamma", "rate", self.rate, lambda v: v > 0, "positive")
        self.name = name or "Gamma"
        super().__init__(tuple(self.rate.shape))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def variance(self):
        return self.concentration / (self.rate * self.rate)

    def sample(self, shape=()):
        return _ops.detach(self.rsample(shape))

    def rsample(self, shape=()):
        shape = sample_shape(shape, "Gamma.rsample")
        return _rsample_gamma(self.concentration, shape) / self.rate

    def log_prob(self, value):
        value = like(value, self.rate)
        a, r = self.concentration, self.rate
        return a * _ops.log(r) + (a - 1.0) * _ops.log(value) - r * value - _ops.lgamma(a)

    def entropy(self):
        a = self.concentration
        return a - _ops.log(self.rate) + _ops.lgamma(a) + (1.0 - a) * _ops.digamma(a)


class Beta(Distribution):
    """Density x**(alpha-1) (1-x)**(beta-1) / B(alpha, beta) on (0, 1)."""

    def __init__(self, alpha, beta, name=None):
        self.alpha, self.beta = params(alpha, beta)
        check("Beta", "alpha", self.alpha, lambda v: v > 0, "positive")
        check("Beta", "beta", self.beta, lambda v: v > 0, "positive")
        self.name = name or "Beta"
        super().__init__(tuple(self.alpha.shape))

    @property
    def mean(self):
        return self.alpha / (self.alpha + self.beta)

    @property
    def variance(self):
        s = self.alpha + self.beta
        return self.alpha * self.beta / (s * s * (s + 1.0))

    def sample(self, shape=()):
        return _ops.detach(self.rsample(shape))

    def rsample(self, shape=()):
        shape = sample_shape(shape, "Beta.rsample")
        x = _rsample_gamma(self.alpha, shape)
        y = _rsample_gamma(self.beta, shape)
        return x / (x + y)

    def log_prob(self, value):
        value = like(value, self.alpha)
        return ((self.alpha - 1.0) * _ops.log(value) + (self.beta - 1.0) * _ops.log1p(-value)
                - _lbeta(self.alpha, self.beta))

    def entropy(self):
        a, b = self.alpha, self.beta
        return (_lbeta(a, b) - (a - 1.0) * _ops.digamma(a) - (b - 1.0) * _ops.digamma(b)
                + (a + b - 2.0) * _ops.digamma(a + b))


class Dirichlet(Distribution):
    """Density prod x_i**(c_i - 1) / B(c) on the simplex of the last dim."""

    def __init__(self, concentration, name=None):
        (self.concentration,) = params(concentration)
        check("Dirichlet", "concentration", self.concentration, lambda v: v > 0, "positive")
        if len(self.concentration.shape) < 1:
            raise ValueError("Dirichlet: concentration must have at least one dim (the "
                             "categories)")
        self.name = name or "Dirichlet"
        shape = tuple(self.concentration.shape)
        super().__init__(shape[:-1], shape[-1:])

    @property
    def mean(self):
        return self.concentration / _ops.sum(self.concentration, -1, keepdim=True)

    @property
    def variance(self):
        c = self.concentration
        c0 = _ops.sum(c, -1, keepdim=True)
        return c * (c0 - c) / (c0 * c0 * (c0 + 1.0))

    def sample(self, shape=()):
        return _ops.detach(self.rsample(shape))

    def rsample(self, shape=()):
        shape = sample_shape(shape, "Dirichlet.rsample")
        g = _rsample_gamma(self.concentration, shape)
        return g / _ops.sum(g, -1, keepdim=True)

    def _log_norm(self):
        c = self.concentration
        return _ops.sum(_ops.lgamma(c), -1) - _ops.lgamma(_ops.sum(c, -1))

    def log_prob(self, value):
        value = like(value, self.concentration)
        return _ops.sum((self.concentration - 1.0) * _ops.log(value), -1) - self._log_norm()

    def entropy(self):
        c = self.concentration
        c0 = _ops.sum(c, -1)
        k = size_of(c, -1)
        return (self._log_norm() + (c0 - k) * _ops.digamma(c0)
                - _ops.sum((c - 1.0) * _ops.digamma(c), -1))


class Chi2(Gamma):
    """The chi-squared distribution with `df` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    def __init__(self, df, name=None):
        (df,) = params(df)
        check("Chi2", "df", df, lambda v: v > 0, "positive")
        super().__init__(0.5 * df, 0.5 + _ops.zeros_like(df), name or "Chi2")
        self.df = df
