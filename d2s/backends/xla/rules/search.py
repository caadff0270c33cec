"""xla rule of `argsort` (`d2s/core/ops/search.py`); the other search ops are
compositions of existing ops."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering


def _argsort(ns, x, axis, descending):
    # stable both ways: ties keep their order, as the numpy kernel's
    return ns.jnp.argsort(x, axis=axis, stable=True, descending=descending).astype(np.int64)


register_lowering("xla", "argsort", _argsort)
