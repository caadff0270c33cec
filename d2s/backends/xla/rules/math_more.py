"""xla rules of the primitives of `d2s/core/ops/math_more.py`: JAX's own
arctan2, erf_inv, lgamma, digamma, polygamma, signbit and gcd, in the dtype
the numpy kernel gives; and `poisson_icdf` (`random_extra.py`) as a while loop."""
from __future__ import annotations

import numpy as np

from ._base import promoted
from ....core.registry import register_lowering

register_lowering("xla", "atan2", promoted("arctan2"))


def _special(fn):
    def rule(ns, x):
        out = np.result_type(x.dtype, np.float16) if np.dtype(x.dtype).kind == "f" \
            else np.dtype(np.float64)
        return fn(ns, ns.jnp.asarray(x).astype(out))
    return rule


register_lowering("xla", "erfinv", _special(lambda ns, x: ns.lax.erf_inv(x)))
register_lowering("xla", "lgamma", _special(lambda ns, x: ns.lax.lgamma(x)))
register_lowering("xla", "digamma", _special(lambda ns, x: ns.lax.digamma(x)))
register_lowering("xla", "trigamma",
                  _special(lambda ns, x: ns.lax.polygamma(ns.jnp.ones((), x.dtype), x)))
register_lowering("xla", "signbit", lambda ns, x: ns.jnp.signbit(x))


def _gcd(ns, x, y):
    dtype = np.result_type(np.dtype(x.dtype), np.dtype(y.dtype))
    return ns.jnp.gcd(ns.jnp.asarray(x).astype(dtype), ns.jnp.asarray(y).astype(dtype))


register_lowering("xla", "gcd", _gcd)



def _poisson_icdf(ns, lam, u):
    """The numpy kernel's loop (`random_extra._icdf_kernel`), step for step."""
    jnp, lax = ns.jnp, ns.lax
    rate = jnp.asarray(lam).astype(jnp.float64)
    log_rate = jnp.log(rate)
    logp = -rate
    cdf = jnp.exp(logp)
    state = (jnp.zeros(rate.shape, jnp.float64), logp, cdf, cdf >= u)

    def step(s):
        k, logp, cdf, done = s
        k = jnp.where(done, k, k + 1.0)
        logp = jnp.where(done, logp, logp + log_rate - jnp.log(k))
        p = jnp.exp(logp)
        cdf = jnp.where(done, cdf, cdf + p)
        return k, logp, cdf, done | (cdf >= u) | ((k > rate) & (p <= cdf * 1e-17))
    k = lax.while_loop(lambda s: ~jnp.all(s[3]), step, state)[0]
    return k.astype(lam.dtype)


register_lowering("xla", "poisson_icdf", _poisson_icdf)
