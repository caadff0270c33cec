"""xla rules of `prod` (in NumPy 2's dtype) and `logsumexp` (`d2s/core/ops/reduce_more.py`)."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering


def _prod(ns, x, axes, keepdim):
    dtype = np.prod(np.zeros(1, x.dtype)).dtype  # int32 / bool products are int64
    return ns.jnp.prod(x, axis=axes, keepdims=keepdim, dtype=dtype)


register_lowering("xla", "prod", _prod)


def _logsumexp(ns, x, axes, keepdim):
    """The kernel's arithmetic: shifted by the max where it is finite, by 0
    elsewhere."""
    jnp = ns.jnp
    if not axes:
        return x
    m = jnp.max(x, axis=axes, keepdims=True)
    m = jnp.where(jnp.isfinite(m), m, jnp.zeros((), x.dtype))
    out = jnp.log(jnp.sum(jnp.exp(x - m), axis=axes, keepdims=True)) + m
    return out if keepdim else jnp.squeeze(out, axis=axes)


register_lowering("xla", "logsumexp", _logsumexp)
