"""xla rule of `prod` (`d2s/core/ops/reduce_more.py`), in NumPy 2's dtype."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering


def _prod(ns, x, axes, keepdim):
    dtype = np.prod(np.zeros(1, x.dtype)).dtype  # int32 / bool products are int64
    return ns.jnp.prod(x, axis=axes, keepdims=keepdim, dtype=dtype)


register_lowering("xla", "prod", _prod)
