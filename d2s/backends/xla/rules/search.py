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
    if k > x.shape[axis]:  # (a dim unknown while building) the kernel raises, naming k:
        ns.check_on_numpy(ns.jnp.asarray(False))  # the call runs again on numpy
        shape = tuple(k if i == axis else d for i, d in enumerate(x.shape))
        return ns.jnp.zeros(shape, x.dtype), ns.jnp.zeros(shape, np.int64)
    # the kernel's stable order, then its first k
    order = ns.jnp.argsort(x, axis=axis, stable=True, descending=largest)
    idx = ns.lax.slice_in_dim(order, 0, k, axis=axis).astype(np.int64)
    return ns.jnp.take_along_axis(x, idx, axis=axis), idx


register_lowering("xla", "topk", _topk)
