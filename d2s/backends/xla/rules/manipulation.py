"""xla rules of the shape ops (`d2s/core/ops/manipulation.py`): reshape, expand,
transpose, squeeze, flatten, concat, stack, gather; dims read from tensors are
compile-time values (`ns.static`)."""
from __future__ import annotations

from ....core.ops.manipulation import (_along, _concat_piece_kernel, _expand_shape, _flatten_kernel,
                                         _reshape_kernel)
from ....core.ops.shape_args import fill_spec
from ....core.registry import register_lowering


def _reshape_like_xla(ns, g, x):
    # (a tensor array `x` or `g`, of a list appended in a tensor loop: see
    # backends/xla/ragged)
    return g.reshape(x.shape)


def _flatten_xla(ns, x, start, stop):
    # (a tensor array `x`, `concat(outs)` of a list appended in a tensor loop:
    # see backends/xla/ragged)
    return _flatten_kernel(x, start, stop)  # array methods only


register_lowering("xla", "reshape", lambda ns, x, *dims, shape: _reshape_kernel(x, *ns.static(dims), shape=shape))
register_lowering("xla", "reshape_like", lambda ns, g, x: _reshape_like_xla(ns, g, x))
register_lowering("xla", "expand", lambda ns, x, *dims, shape: ns.jnp.broadcast_to(
        x, _expand_shape(x.shape, fill_spec(shape, ns.static(dims)))))
register_lowering("xla", "detach", lambda ns, x: ns.lax.stop_gradient(x))
register_lowering("xla", "transpose", lambda ns, x, perm: ns.transpose(x, perm))
register_lowering("xla", "unsqueeze", lambda ns, x, axes: ns.jnp.expand_dims(x, axes))
register_lowering("xla", "squeeze", lambda ns, x, axes: ns.jnp.squeeze(x, axes) if axes else x)
register_lowering("xla", "flatten", lambda ns, x, start, stop: _flatten_xla(ns, x, start, stop))
register_lowering("xla", "concat", lambda ns, *xs, axis: ns.jnp.concatenate(ns.promote(*xs), axis=axis))
register_lowering("xla", "concat_piece", lambda ns, g, *xs, axis, index: _concat_piece_kernel(
        g, *xs, axis=axis, index=index))
register_lowering("xla", "stack", lambda ns, *xs, axis: ns.jnp.stack(ns.promote(*xs), axis=axis))
register_lowering("xla", "gather", lambda ns, x, index, axis: ns.jnp.asarray(x)[_along(axis, index)])
register_lowering("xla", "gather_grad", lambda ns, g, x, index, axis: ns.jnp.zeros(x.shape, g.dtype).at[
        _along(axis, index)].add(g))
