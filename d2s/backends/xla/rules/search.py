"""xla rules of `argsort` and `topk` (`d2s/core/ops/search.py`); the other search
ops are compositions of existing ops."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering


def _argsort(ns, x, axis, descending):
    # stable both ways: ties keep their order, as the numpy kernel's
    return ns.jnp.argsort(x, axis=axis, stable=True, descending=descending).astype(np.int64)


register_lowering("xla", "argsort", _argsort)


def _topk(ns, x, k, axis, largest):
    # the kernel's stable order, then its first k
    order = ns.jnp.argsort(x, axis=axis, stable=True, descending=largest)
    idx = ns.lax.slice_in_dim(order, 0, k, axis=axis).astype(np.int64)
    return ns.jnp.take_along_axis(x, idx, axis=axis), idx


register_lowering("xla", "topk", _topk)
