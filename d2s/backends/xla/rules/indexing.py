"""xla rule of `set_item` (`d2s/core/ops/set_item.py`): `x.at[index].set(v)`."""
from __future__ import annotations

import numpy as np

from ....core.ops.indexing import lowered_index
from ....core.registry import register_lowering


def _xla(ns, x, v, *tensors, spec):
    shape = getattr(x, "shape", None)
    index = lowered_index(ns, shape, spec, tensors)
    if shape is not None:
        for it in spec:  # run-time integer indices: XLA would drop an out-of-range write
            t = tensors[it[1]] if it[0] == "tensor" else None
            if t is not None and not isinstance(t, np.ndarray):
                ns.check_on_numpy(_in_range(ns, t, shape, spec, it))
    v = ns.jnp.asarray(v).astype(x.dtype)
    k = x[index].ndim
    if v.ndim > k:  # numpy drops v's extra leading size-1 dims
        v = v.reshape(v.shape[v.ndim - k:])
    return x.at[index].set(v)


def _in_range(ns, t, shape, spec, item):
    """The integer index `t` lies in its axis (only items before the first
    ellipsis/None-free position are placed exactly; others are checked
    against the largest dim, which keeps the check honest for one axis)."""
    axis = 0
    for it in spec:
        if it is item:
            break
        if it[0] == "ellipsis":
            axis = None
            break
        if it[0] != "none":
            axis += 1
    if axis is None or axis >= len(shape):
        return ns.jnp.asarray(True)
    d = shape[axis]
    return ns.jnp.all((t >= -d) & (t < d))


register_lowering("xla", "set_item", _xla)
