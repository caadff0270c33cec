"""xla rule of `set_item` (`d2s/core/ops/set_item.py`): `x.at[index].set(v)`."""
from __future__ import annotations

import numpy as np

from ....core.ops.indexing import lowered_index
from ....core.registry import register_lowering


def _masked(ns, x, v, mask):
    """`x[mask] = v` with one value per selected row (v broadcasts to the dims
    after the mask's): a `where`, whose shape does not depend on the mask."""
    m = mask.ndim
    v = ns.jnp.asarray(v).astype(x.dtype)
    while v.ndim > x.ndim - m and v.shape[0] == 1:
        v = v.reshape(v.shape[1:])
    if v.ndim > x.ndim - m:
        raise ns.Unsupported("`x[mask] = v` with one value per true element of the mask: "
                             "their count depends on the mask's values")
    return ns.jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - m)), v, x)


def _xla(ns, x, v, *tensors, spec):
    shape = getattr(x, "shape", None)
    if len(spec) == 1 and spec[0][0] == "tensor" and np.dtype(tensors[0].dtype) == np.bool_ \
            and shape is not None:
        return _masked(ns, x, v, tensors[0])
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
