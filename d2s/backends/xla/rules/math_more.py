"""xla rules of the primitives of `d2s/core/ops/math_more.py`: JAX's own
arctan2, erf_inv, lgamma, digamma, polygamma, signbit and gcd, in the dtype
the numpy kernel gives."""
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
