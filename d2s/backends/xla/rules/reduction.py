"""xla rules of the reductions (`d2s/core/ops/reduction.py`), in the dtype NumPy's
reduction gives."""
from __future__ import annotations

import numpy as np

from ....core.ops._base import probe_dtype
from ....core.ops.reduction import _np_mean, _np_sum, _summed_axes
from ....core.registry import register_lowering


def _sum_to_like_xla(ns, g, x):
    if g.shape == x.shape:
        return g
    axes = _summed_axes(g.shape, x.shape)
    return ns.jnp.sum(g, axis=axes, keepdims=True, dtype=g.dtype).reshape(x.shape)


def _reduce_xla(fn_name, probe):
    """XLA rule `jnp.<fn_name>` over `axes`, in the dtype NumPy's reduction gives
    (int32 sums widen to int64, int means are float64)."""
    def rule(ns, x, axes, keepdim):
        dtype = probe_dtype(probe, np.dtype(x.dtype))
        return getattr(ns.jnp, fn_name)(x, axis=axes, keepdims=keepdim, dtype=dtype)
    return rule


def _argmax_xla(ns, x, axis, keepdim):
    if axis is None:
        return ns.jnp.argmax(x).astype(np.int64).reshape((1,) * x.ndim if keepdim else ())
    return ns.jnp.argmax(x, axis=axis, keepdims=keepdim).astype(np.int64)


register_lowering("xla", "sum_to_like", _sum_to_like_xla)
register_lowering("xla", "broadcast_like", lambda ns, g, x: ns.jnp.broadcast_to(
        g, np.broadcast_shapes(g.shape, x.shape)))
register_lowering("xla", "sum", _reduce_xla("sum", _np_sum))
register_lowering("xla", "mean", _reduce_xla("mean", _np_mean))
register_lowering("xla", "max", lambda ns, x, axes, keepdim: ns.jnp.max(x, axis=axes, keepdims=keepdim))
register_lowering("xla", "min", lambda ns, x, axes, keepdim: ns.jnp.min(x, axis=axes, keepdims=keepdim))
register_lowering("xla", "argmax", _argmax_xla)
