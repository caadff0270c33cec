"""XLA rule of `nextafter` (d2s/core/ops/nextafter.py): jax.numpy's, in the
kernel's result dtype."""
from __future__ import annotations

import numpy as np

from ....core.registry import lowers


@lowers("xla", "nextafter")
def _nextafter(ns, x, y):
    dtype = np.result_type(np.dtype(x.dtype), np.dtype(y.dtype))
    return ns.jnp.nextafter(ns.jnp.asarray(x).astype(dtype), ns.jnp.asarray(y).astype(dtype))
