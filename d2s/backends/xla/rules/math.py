"""xla rules of the unary math ops (`d2s/core/ops/math.py`): the jnp function
of the same name after NumPy 2's dtype rule (an int input computes in float64)."""
from __future__ import annotations

import numpy as np

from ._base import promoted
from ....core.registry import register_lowering

for _op, _fn in [("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("asin", "arcsin"),
                 ("acos", "arccos"), ("atan", "arctan"), ("sinh", "sinh"), ("cosh", "cosh"),
                 ("floor", "floor"), ("ceil", "ceil"), ("trunc", "trunc"),
                 ("log1p", "log1p"), ("expm1", "expm1"), ("log2", "log2"),
                 ("log10", "log10")]:
    register_lowering("xla", _op, promoted(_fn))


def _rsqrt(ns, x):
    out = np.sqrt(np.zeros(1, x.dtype)).dtype  # NumPy's: an int gives float64
    return 1 / ns.jnp.sqrt(ns.jnp.asarray(x).astype(out))


def _round(ns, x):
    """Halfway cases away from zero, as the numpy kernel (jnp.round is to even)."""
    jnp = ns.jnp
    if np.dtype(x.dtype).kind not in "fc":
        return x
    t = jnp.trunc(x)
    return t + jnp.where(jnp.abs(x - t) >= 0.5, jnp.sign(x), 0).astype(x.dtype)


register_lowering("xla", "rsqrt", _rsqrt)
register_lowering("xla", "round", _round)
