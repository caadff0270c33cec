"""xla rules of the reductions (`d2s/core/ops/reduction.py`), in the dtype NumPy's
reduction gives."""
from __future__ import annotations

import numpy as np

from ....core.ops._base import probe_dtype
from ....core.ops.reduction import _np_mean, _np_sum, _summed_axes
from ....core.registry import register_lowering
from ._tensor_arrays import _elementwise, _extreme_identity, _filled


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
register_lowering("xla", "max",
                  lambda ns, x, axes, keepdim: ns.jnp.max(x, axis=axes, keepdims=keepdim))
register_lowering("xla", "min",
                  lambda ns, x, axes, keepdim: ns.jnp.min(x, axis=axes, keepdims=keepdim))
register_lowering("xla", "argmax", _argmax_xla)


# ---- on tensor arrays (`_tensor_arrays`): the "tensor_array" variant -----------------
def _reduced(ns, rule, x, axes, keepdim, identity):
    """A reduction (`rule`) of an array over `axes`: masked when they hold its axis."""
    if x.axis in axes:
        return rule(ns, _filled(ns, x, identity(x.buf.dtype)), axes=axes, keepdim=keepdim)
    out = rule(ns, x.buf, axes=axes, keepdim=keepdim)
    axis = x.axis if keepdim else x.axis - sum(1 for a in axes if a < x.axis)
    return ns.TensorArray(out, x.length, x.base, axis)


def _sum(ns, rule, x, axes, keepdim):
    return _reduced(ns, rule, x, axes, keepdim, lambda dtype: 0)


def _mean(ns, rule, x, axes, keepdim):
    if x.axis not in axes:
        return _reduced(ns, rule, x, axes, keepdim, None)
    # the mean rule's own result dtype (an int mean is float64); XLA drops the value
    dtype = rule(ns, x.buf, axes=axes, keepdim=keepdim).dtype
    total = ns.jnp.sum(_filled(ns, x, 0), axis=axes, keepdims=keepdim, dtype=dtype)
    count = x.length * int(np.prod([x.buf.shape[a] for a in axes if a != x.axis],
                                   dtype=np.int64))
    return (total.astype(dtype) / count.astype(dtype)).astype(dtype)


def _extreme(lowest):
    def handler(ns, rule, x, axes, keepdim):
        if x.axis in axes:  # numpy raises for the max of nothing
            ns.check_on_numpy(x.length > 0)
        return _reduced(ns, rule, x, axes, keepdim,
                        lambda dtype: _extreme_identity(dtype, lowest))
    return handler


def _argmax(ns, rule, x, axis, keepdim):
    """`argmax` over the array's length: the entries past it are the lowest
    value, after every entry within it (the first of equal maxima is numpy's
    and XLA's answer). Over all entries: the flat index is numpy's when the
    length is the outermost axis (the padding then comes last)."""
    if axis is None and x.axis != 0:
        raise ns.Unsupported("an argmax over all entries of a tensor array whose length is "
                          "not its first axis")
    if axis is not None and axis != x.axis:
        out = rule(ns, x.buf, axis=axis, keepdim=keepdim)
        return ns.TensorArray(out, x.length, x.base, x.axis if keepdim or axis > x.axis
                           else x.axis - 1)
    ns.check_on_numpy(x.length > 0)  # numpy raises for the argmax of nothing
    return rule(ns, _filled(ns, x, _extreme_identity(x.dtype, lowest=True)), axis=axis,
                keepdim=keepdim)


def _broadcast_like(ns, rule, g, x):
    if ns.is_tensor_array(g):
        return _elementwise(ns, rule, g, x)
    at = x.axis + g.ndim - x.ndim
    if at >= 0 and g.shape[at] != 1:  # `g` holds the length (a cotangent from the host)
        ns.check_on_numpy(x.length == g.shape[at])
        like = list(x.buf.shape)
        like[x.axis] = g.shape[at]
        return ns.jnp.broadcast_to(g, np.broadcast_shapes(g.shape, tuple(like)))
    shape = np.broadcast_shapes(g.shape, x.buf.shape)
    return ns.TensorArray(ns.jnp.broadcast_to(g, shape), x.length, x.base,
                       x.axis + len(shape) - x.ndim)


def _sum_to_like(ns, rule, g, x):
    """The gradient of broadcasting: `g` summed over the axes `x` was broadcast
    along. Against an array `x`, its run-time length is never one of them
    (the forward broadcast no fixed dim against it: see `_elementwise`)."""
    if not ns.is_tensor_array(x):
        lead = g.ndim - x.ndim
        at = g.axis - lead
        if at >= 0 and x.shape[at] != 1:  # pragma: no cover - the program's shapes say no
            raise ns.Unsupported("it sums a tensor array to a fixed dim")
        return rule(ns, _filled(ns, g, 0), x)
    buf = g.buf if ns.is_tensor_array(g) else g
    lead = buf.ndim - x.ndim
    if ns.is_tensor_array(g) and g.axis - lead != x.axis:
        raise ns.Unsupported("it sums a cotangent to a tensor array's shape")
    ns.check_on_numpy((g.length if ns.is_tensor_array(g) else buf.shape[x.axis + lead])
                      == x.length)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, d in enumerate(x.buf.shape)
        if i != x.axis and d == 1 and buf.shape[i + lead] != 1)
    out = ns.jnp.sum(buf, axis=axes, keepdims=True, dtype=buf.dtype) if axes else buf
    out = out.reshape(out.shape[lead:])
    return ns.TensorArray(out, g.length, g.base, x.axis) if ns.is_tensor_array(g) else out


register_lowering("xla", "sum", _sum, variant="tensor_array")
register_lowering("xla", "mean", _mean, variant="tensor_array")
register_lowering("xla", "max", _extreme(True), variant="tensor_array")
register_lowering("xla", "min", _extreme(False), variant="tensor_array")
register_lowering("xla", "argmax", _argmax, variant="tensor_array")
register_lowering("xla", "broadcast_like", _broadcast_like, variant="tensor_array")
register_lowering("xla", "sum_to_like", _sum_to_like, variant="tensor_array")
