"""xla rules of the shape ops (`d2s/core/ops/manipulation.py`): reshape, expand,
transpose, squeeze, flatten, concat, stack, gather; dims read from tensors are
compile-time values (`ns.static`)."""
from __future__ import annotations

import numpy as np

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


register_lowering("xla", "reshape",
                  lambda ns, x, *dims, shape: _reshape_kernel(x, *ns.static(dims), shape=shape))
register_lowering("xla", "reshape_like", lambda ns, g, x: _reshape_like_xla(ns, g, x))
register_lowering("xla", "expand", lambda ns, x, *dims, shape: ns.jnp.broadcast_to(
    x, _expand_shape(x.shape, fill_spec(shape, ns.static(dims)))))
register_lowering("xla", "detach", lambda ns, x: ns.lax.stop_gradient(x))
register_lowering("xla", "transpose", lambda ns, x, perm: ns.transpose(x, perm))
register_lowering("xla", "unsqueeze", lambda ns, x, axes: ns.jnp.expand_dims(x, axes))
register_lowering("xla", "squeeze", lambda ns, x, axes: ns.jnp.squeeze(x, axes) if axes else x)
register_lowering("xla", "flatten", lambda ns, x, start, stop: _flatten_xla(ns, x, start, stop))
register_lowering("xla", "concat",
                  lambda ns, *xs, axis: ns.jnp.concatenate(ns.promote(*xs), axis=axis))
register_lowering("xla", "concat_piece", lambda ns, g, *xs, axis, index: _concat_piece_kernel(
    g, *xs, axis=axis, index=index))
register_lowering("xla", "stack", lambda ns, *xs, axis: ns.jnp.stack(ns.promote(*xs), axis=axis))
register_lowering("xla", "gather",
                  lambda ns, x, index, axis: ns.jnp.asarray(x)[_along(axis, index)])
register_lowering("xla", "gather_grad", lambda ns, g, x, index, axis: ns.jnp.zeros(
    x.shape, g.dtype).at[_along(axis, index)].add(g))


# ---- on tensor arrays (`_tensor_arrays`): the "tensor_array" variant -----------------
def _transpose(ns, rule, x, perm):
    return ns.TensorArray(ns.jnp.transpose(x.buf, perm), x.length, x.base, list(perm).index(x.axis))


def _unsqueeze(ns, rule, x, axes):
    out = ns.jnp.expand_dims(x.buf, axes)
    kept = [i for i in range(out.ndim) if i not in axes]
    return ns.TensorArray(out, x.length, x.base, kept[x.axis])


def _squeeze(ns, rule, x, axes):
    if x.axis in axes:
        raise ns.Unsupported("it squeezes a tensor array's run-time length")
    out = ns.jnp.squeeze(x.buf, axes) if axes else x.buf
    return ns.TensorArray(out, x.length, x.base, x.axis - sum(1 for a in axes if a < x.axis))


def _flatten(ns, rule, x, start, stop):
    if start == x.axis:  # `concat(outs, axis=k)`: a prefix stays a prefix
        return x.merged_rows(stop - start)
    if stop < x.axis:
        out = rule(ns, x.buf, start=start, stop=stop)
        return ns.TensorArray(out, x.length, x.base, x.axis - (stop - start))
    if start > x.axis:
        return ns.TensorArray(rule(ns, x.buf, start=start, stop=stop), x.length, x.base, x.axis)
    raise ns.Unsupported("it flattens a tensor array's run-time length into an earlier dim")


def _reshape(ns, rule, x, *dims, shape):
    """`reshape` that merges the array's axis with the dims after it (`-1` there,
    the others kept: `concat(outs).reshape([-1])`): a prefix stays a prefix."""
    spec, buf, a = list(shape), x.buf.shape, x.axis
    if dims or spec.count(-1) != 1 or spec.index(-1) != a:
        raise ns.Unsupported("it reshapes a tensor array other than by merging its run-time "
                          "length with the dims after it")
    before, after = spec[:a], spec[a + 1:]
    stop = len(buf) - len(after)
    if stop < a + 1 or any(d not in (0, b) for d, b in zip(before, buf[:a])) or (
            tuple(after) != tuple(buf[stop:])):
        raise ns.Unsupported("it reshapes a tensor array other than by merging its run-time "
                          "length with the dims after it")
    return x.merged_rows(stop - a - 1)


def _reshape_like(ns, rule, g, x):
    if ns.is_tensor_array(x) and not ns.is_tensor_array(g):
        rest = [d for i, d in enumerate(x.buf.shape) if i != x.axis]
        row = int(np.prod(rest, dtype=np.int64))
        if row == 0 or g.size % row:
            raise ns.Unsupported("it reshapes to the shape of a tensor array, whose length "
                              "is a run-time value")
        ns.check_on_numpy(x.length * row == g.size)
        shape = list(x.buf.shape)
        shape[x.axis] = g.size // row
        return g.reshape(shape)
    if ns.is_tensor_array(x) and ns.is_tensor_array(g) and (
            g.buf.size == x.buf.size and g.buf.shape[:g.axis] == x.buf.shape[:x.axis]):
        return ns.TensorArray(g.buf.reshape(x.buf.shape), x.length, x.base, x.axis)
    raise ns.Unsupported("it reshapes a tensor array, whose length is a run-time value")


def _row_of(ns, x, index, axis):
    """The run-time row `index` (negative: from the length) picks along the
    array's length; numpy's IndexError (via numpy) outside it."""
    if not ns.is_tensor_array(x) or ns.is_tensor_array(index) or axis != x.axis \
            or x.axis != 0 or getattr(index, "ndim", 1) != 0:
        raise ns.Unsupported("a gather from a tensor array other than of one row along its length")
    ns.check_on_numpy((index < x.length) & (index >= -x.length))
    return x.row_index(index)


def _gather(ns, rule, x, index, axis):
    """`gather(arr, i, axis=0)` for a scalar `i`: one row (`max(outs)`)."""
    return rule(ns, x.buf, _row_of(ns, x, index, axis), axis=axis)


def _gather_grad(ns, rule, g, x, index, axis):
    if ns.is_tensor_array(g):
        raise ns.Unsupported("a gather cotangent that is itself a tensor array")
    buf = rule(ns, g, x.buf, _row_of(ns, x, index, axis), axis=axis)
    return ns.TensorArray(buf, x.length, x.base, x.axis)


register_lowering("xla", "transpose", _transpose, variant="tensor_array")
register_lowering("xla", "unsqueeze", _unsqueeze, variant="tensor_array")
register_lowering("xla", "squeeze", _squeeze, variant="tensor_array")
register_lowering("xla", "flatten", _flatten, variant="tensor_array")
register_lowering("xla", "reshape", _reshape, variant="tensor_array")
register_lowering("xla", "reshape_like", _reshape_like, variant="tensor_array")
register_lowering("xla", "gather", _gather, variant="tensor_array")
register_lowering("xla", "gather_grad", _gather_grad, variant="tensor_array")
