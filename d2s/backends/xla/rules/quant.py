"""xla rules of `weight_dequantize` and `gather_dequantize`
(`d2s/core/ops/quant.py`): the same unpacking, gathering and scaling in
jnp, so that XLA fuses the dequantization into the op that reads it."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering


def _weight_dequantize(ns, q, scale, bits=8, k=1, transpose=False):
    jnp = ns.jnp
    q = jnp.asarray(q)
    if bits == 4:
        lo = (q & 15).astype(np.int8) - 8
        hi = (q >> 4).astype(np.int8) - 8
        q = jnp.stack([lo, hi], axis=1).reshape(2 * q.shape[0], q.shape[1])
    groups, n = scale.shape
    w = (q.reshape(groups, -1, n).astype(scale.dtype) * jnp.asarray(scale)[:, None, :])
    w = w.reshape(-1, n)[:k]
    return w.T if transpose else w


register_lowering("xla", "weight_dequantize", _weight_dequantize)


def _gather_dequantize(ns, q, scale, index):
    # (out-of-range ids clamp, as the xla rule of `gather` does)
    jnp = ns.jnp
    return jnp.asarray(q)[index].astype(scale.dtype) * jnp.asarray(scale)[index]


register_lowering("xla", "gather_dequantize", _gather_dequantize)
