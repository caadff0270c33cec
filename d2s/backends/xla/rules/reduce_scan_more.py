"""xla rules of the scans of `d2s/core/ops/reduce_scan_more.py`: JAX's
cumlogsumexp, and cummax / cummin with the index of the latest extreme."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering


def _logcumsumexp(ns, x, axis, reverse):
    return ns.lax.cumlogsumexp(x, axis=axis, reverse=reverse)


def _cum_extreme(ns, x, axis, largest):
    jnp, lax = ns.jnp, ns.lax
    v = (lax.cummax if largest else lax.cummin)(x, axis=axis)
    hit = x == v
    if np.dtype(x.dtype).kind == "f":
        hit = hit | jnp.isnan(x)
    shape = [-1 if i == axis else 1 for i in range(x.ndim)]
    pos = jnp.arange(x.shape[axis], dtype=jnp.int64).reshape(shape)
    idx = lax.cummax(jnp.where(hit, pos, jnp.int64(-1)), axis=axis)
    return v, idx


register_lowering("xla", "logcumsumexp", _logcumsumexp)
register_lowering("xla", "cum_extreme", _cum_extreme)
