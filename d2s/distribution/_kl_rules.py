"""The closed forms of KL(p || q) for the pairs PaddlePaddle has (registered
with `register_kl`; imported by `kl_divergence` on first use)."""
from __future__ import annotations

import numpy as np

from ..core import ops as _ops
from ._categorical import Categorical
from ._discrete import Bernoulli, Binomial, Geometric, Poisson, _xlogy
from ._gamma import Beta, Dirichlet, Gamma, _lbeta
from ._independent import Independent
from ._util import size_of, sum_last
from ._kl import kl_divergence, register_kl
from ._multivariate_normal import MultivariateNormal, _diag, _mT, _tril_solve
from ._normal import LogNormal, Normal
from ._simple import Cauchy, Exponential, Laplace
from ._uniform import Uniform


@register_kl(Normal, Normal)
def _kl_normal(p, q):
    ratio = p.scale / q.scale
    d = (p.loc - q.loc) / q.scale
    return 0.5 * (ratio * ratio + d * d) - 0.5 - _ops.log(ratio)


@register_kl(LogNormal, LogNormal)
def _kl_lognormal(p, q):
    return _kl_normal(p._base, q._base)


@register_kl(Categorical, Categorical)
def _kl_categorical(p, q):
    return p.kl_divergence(q)


@register_kl(Uniform, Uniform)
def _kl_uniform(p, q):
    """log of the width ratio where q's support holds p's, else inf."""
    kl = _ops.log((q.high - q.low) / (p.high - p.low))
    inside = _ops.logical_and(_ops.less_equal(q.low, p.low), _ops.greater_equal(q.high, p.high))
    return _ops.where(inside, kl, _ops.full_like(kl, np.inf))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli(p, q):
    a, b = p.probs, q.probs
    return (_xlogy(a, a) - a * _ops.log(b)
            + _xlogy(1.0 - a, 1.0 - a) - (1.0 - a) * _ops.log1p(-b))


@register_kl(Binomial, Binomial)
def _kl_binomial(p, q):
    """For equal total counts (checked when both are eager)."""
    from ..core.tensor import Tensor
    if isinstance(p.total_count, Tensor) and isinstance(q.total_count, Tensor) and \
            not np.array_equal(p.total_count.numpy(), q.total_count.numpy()):
        raise NotImplementedError("kl_divergence(Binomial, Binomial): only for equal "
                                  "total_count")
    return p.total_count * _kl_bernoulli(p, q)


@register_kl(Geometric, Geometric)
def _kl_geometric(p, q):
    return -p.entropy() - (1.0 / p.probs - 1.0) * _ops.log1p(-q.probs) - _ops.log(q.probs)


@register_kl(Poisson, Poisson)
def _kl_poisson(p, q):
    return _xlogy(p.rate, p.rate) - p.rate * _ops.log(q.rate) - p.rate + q.rate


@register_kl(Beta, Beta)
def _kl_beta(p, q):
    a1, b1, a2, b2 = p.alpha, p.beta, q.alpha, q.beta
    return (_lbeta(a2, b2) - _lbeta(a1, b1) + (a1 - a2) * _ops.digamma(a1)
            + (b1 - b2) * _ops.digamma(b1) + (a2 - a1 + b2 - b1) * _ops.digamma(a1 + b1))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet(p, q):
    c1, c2 = p.concentration, q.concentration
    s1 = _ops.sum(c1, -1, keepdim=True)
    return (_ops.lgamma(_ops.sum(c1, -1)) - _ops.lgamma(_ops.sum(c2, -1))
            - _ops.sum(_ops.lgamma(c1) - _ops.lgamma(c2), -1)
            + _ops.sum((c1 - c2) * (_ops.digamma(c1) - _ops.digamma(s1)), -1))


@register_kl(Gamma, Gamma)
def _kl_gamma(p, q):
    a1, r1, a2, r2 = p.concentration, p.rate, q.concentration, q.rate
    return ((a1 - a2) * _ops.digamma(a1) - _ops.lgamma(a1) + _ops.lgamma(a2)
            + a2 * (_ops.log(r1) - _ops.log(r2)) + a1 * (r2 - r1) / r1)


@register_kl(Exponential, Exponential)
def _kl_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1.0 - _ops.log(ratio)


@register_kl(Laplace, Laplace)
def _kl_laplace(p, q):
    ratio = p.scale / q.scale
    diff = _ops.abs(p.loc - q.loc)
    return -_ops.log(ratio) + diff / q.scale + ratio * _ops.exp(-diff / p.scale) - 1.0


@register_kl(Cauchy, Cauchy)
def _kl_cauchy(p, q):
    s = p.scale + q.scale
    d = p.loc - q.loc
    return _ops.log((s * s + d * d) / (4.0 * p.scale * q.scale))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn(p, q):
    """0.5 (tr(Sq^-1 Sp) + m^T Sq^-1 m - k) + log det Lq - log det Lp, m = mu_q - mu_p."""
    lp, lq = p.scale_tril, q.scale_tril
    shape = _ops.broadcast_tensors([lp, lq])
    lp, lq = shape
    m = _tril_solve(lq, lp)  # Lq^-1 Lp
    diff = _ops.unsqueeze(q.loc - p.loc, -1)
    diff = _ops.expand(diff, list(lq.shape[:-1]) + [1]) if None not in lq.shape else diff
    w = _ops.squeeze(_tril_solve(lq, diff), -1)
    k = size_of(p.loc, -1)
    return (0.5 * (_ops.sum(_ops.sum(m * m, -1), -1) + _ops.sum(w * w, -1) - k)
            + _ops.sum(_ops.log(_diag(lq)), -1) - _ops.sum(_ops.log(_diag(lp)), -1))


@register_kl(Independent, Independent)
def _kl_independent(p, q):
    if p.reinterpreted_batch_rank != q.reinterpreted_batch_rank:
        raise NotImplementedError("kl_divergence(Independent, Independent): the two must "
                                  "reinterpret the same number of batch dims")
    return sum_last(kl_divergence(p.base, q.base), p.reinterpreted_batch_rank)


del _mT
