"""Random functions that ported model code calls (issue 25): poisson,
standard_normal, randint_like.

standard_normal and randint_like are the existing draws (`gaussian`,
`randint`) under Paddle's names. poisson is a uniform draw (made on the
host before an xla run, as every d2s draw is, so both backends get the
numpy backend's numbers) turned into a sample by the inverse of the Poisson
CDF: `poisson_icdf`, a deterministic primitive whose xla rule runs the same
arithmetic in a while loop (`rules/math_more.py`).
"""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ._base import lift

__all__ = ["poisson", "standard_normal", "randint_like"]


def _icdf_kernel(lam, u):
    """The smallest k with P(K <= k) >= u for K ~ Poisson(lam): the terms
    p_k = exp(log p_(k-1) + log lam - log k) from log p_0 = -lam (in log
    space: exp(-lam) alone underflows for lam > 745) summed until they reach
    u, or until past the mode they no longer change the sum (u within a
    rounding of 1). The loop runs about lam + a few sqrt(lam) times."""
    rate = np.asarray(lam, np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_rate = np.log(rate)
        k = np.zeros(rate.shape)
        logp = -rate
        cdf = np.exp(logp)
        done = cdf >= u
        while not done.all():
            k = np.where(done, k, k + 1.0)
            logp = np.where(done, logp, logp + log_rate - np.log(k))
            p = np.exp(logp)
            cdf = np.where(done, cdf, cdf + p)
            done = done | (cdf >= u) | ((k > rate) & (p <= cdf * 1e-17))
    return k.astype(np.asarray(lam).dtype)


register_op("poisson_icdf", _icdf_kernel,
            lambda lam, u: Aval(tuple(lam.shape), np.dtype(lam.dtype)),
            lambda g, out, lam, u: (_zeros(lam), None))


def _zeros(x):
    from .elementwise import zeros_like_
    return zeros_like_(x)  # a sample does not move with its rate (Paddle's gradient)


def poisson(x, name=None):
    """A Poisson sample for each rate in `x` (float, non-negative), in x's
    dtype."""
    from .random_ops import uniform
    from .shaping import _dim
    x = lift(x)
    if np.dtype(x.dtype).kind != "f":
        raise TypeError(f"poisson: the rates must be a float tensor, got {x.dtype}")
    from ..tensor import Tensor
    if isinstance(x, Tensor) and x.size and (x.numpy() < 0).any():
        raise ValueError("poisson: the rates must be non-negative")
    u = uniform([_dim(x, i) for i in range(len(x.shape))], "float64", 0.0, 1.0)
    return bind("poisson_icdf", x, u)


def standard_normal(shape, dtype=None, name=None):
    """Samples of the standard normal distribution (float32 by default)."""
    from .random_ops import randn
    return randn(shape, "float32" if dtype is None else dtype)


def randint_like(x, low=0, high=None, dtype=None, name=None):
    """Integers drawn uniformly from [low, high) (from [0, low) when high is
    None), shaped like `x`, in x's dtype unless `dtype`."""
    from .random_more import randint
    from .shaping import _dim
    x = lift(x)
    shape = [_dim(x, i) for i in range(len(x.shape))]
    return randint(low, high, shape, x.dtype if dtype is None else dtype)
