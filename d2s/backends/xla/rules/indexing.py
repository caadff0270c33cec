"""xla rules of indexing: `getitem` and its gradient (`d2s/core/ops/indexing.py`:
jax indexes as numpy does; a window at a run-time start is a dynamic slice)
and `set_item` (`d2s/core/ops/set_item.py`): `x.at[index].set(v)`."""
from __future__ import annotations

import numpy as np

from ....core.ops.indexing import decode_index
from ....core.registry import register_lowering
from ._tensor_arrays import _filled


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
    if isinstance(x, np.ndarray):
        # A constant target (`y = d2s.zeros([3])`, then `y[i] = ...`) comes
        # as a numpy array: no `.at`, and no indexing by traced values.
        x = ns.jnp.asarray(x)
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
    if isinstance(x, np.ndarray):  # a folded constant (`d2s.zeros` written at an int)
        x = ns.jnp.asarray(x)
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


def lowered_index(ns, shape, spec, tensors):
    """The index a spec denotes for a compiling backend (jax indexes as numpy
    does, and clamps out-of-range values that are only known at run time).
    Shapes that depend on values cannot compile: `ns.Unsupported`. An index
    made only of constants is checked against `shape` (when the backend knows
    it statically) now, as numpy would."""
    for it in spec:
        if it[0] == "tensor" and np.dtype(tensors[it[1]].dtype) == np.bool_:
            raise ns.Unsupported("indexing with a bool mask: the result's shape depends "
                                 "on the mask's values")
        if it[0] == "slice" and any(isinstance(b, tuple) for b in it[1:]):
            raise ns.Unsupported("a slice with tensor bounds: the result's shape depends "
                                 "on their values")
    if shape is not None and all(isinstance(t, np.ndarray) for t in tensors):
        index = decode_index(spec, tensors)
        np.broadcast_to(np.empty((), bool), shape)[index]  # numpy's IndexError, if any
        return index
    return tuple(tensors[it[1]] if it[0] == "tensor" else decode_index((it,), ())[0]
                 for it in spec)


def _empty_axes_run_indexes(spec, tensors, shape):
    """The axes of size 0 that a run-time integer index addresses (a loop over
    an empty tensor compiles a body that indexes it, and never runs it)."""
    if shape is None or 0 not in shape:
        return ()
    consuming = sum(1 for it in spec if it[0] not in ("none", "ellipsis"))
    axes, axis = [], 0
    for it in spec:
        if it[0] == "ellipsis":
            axis += len(shape) - consuming
            continue
        if it[0] == "none":
            continue
        if (it[0] == "tensor" and not isinstance(tensors[it[1]], np.ndarray)
                and shape[axis] == 0):
            axes.append(axis)
        axis += 1
    return tuple(axes)


def _window(ns, shape, spec, tensors):
    """(position in `spec`, axis of x, start, size) of a slice `x[t:t + c]`
    whose bounds are tensors, the stop the start plus an integer constant of
    the program (`ns.constant_offset`), and every other item static; or None.
    XLA slices such a window (a static size at a run-time start)."""
    found, axis = None, 0
    for p, it in enumerate(spec):
        if it[0] == "ellipsis" or (it[0] != "none" and axis >= len(shape)):
            return None
        if it[0] == "slice" and any(isinstance(b, tuple) for b in it[1:]):
            start, stop, step = it[1:]
            if found is not None or step not in (None, 1) or not (
                    isinstance(start, tuple) and isinstance(stop, tuple)):
                return None
            begin = tensors[start[1]]
            size = ns.constant_offset(begin, tensors[stop[1]])
            if size is None or not 0 <= size <= shape[axis] or getattr(begin, "ndim", 1) != 0:
                return None
            found = (p, axis, begin, size)
        if it[0] != "none":
            axis += 1
    return found


def _in_window(ns, shape, window):
    """The window's start, checked to lie where numpy's slice is the window
    itself (`0 <= t` and `t + c <= dim`; elsewhere numpy clips it or counts
    from the end: the call runs again on numpy)."""
    _, axis, start, size = window
    ns.check_on_numpy((start >= 0) & (start <= shape[axis] - size))
    return start


def _without_window(spec, window):
    return spec[:window[0]] + (("slice", None, None, None),) + spec[window[0] + 1:]


def _getitem_xla(ns, x, *tensors, spec):
    # a backend's tensor array has no static shape (its length is a run-time value)
    shape = getattr(x, "shape", None)
    if isinstance(x, np.ndarray) and tensors:
        # A constant (a Python list a tensor loop reads by its counter:
        # `zip(row, [1.0, 2.0])`) is a numpy array, which traced indices break.
        x = ns.jnp.asarray(x)
    window = None if shape is None else _window(ns, shape, spec, tensors)
    if window is not None:  # `x[t:t + c]`: a window of x, then the rest of the index
        start = _in_window(ns, shape, window)
        x = ns.lax.dynamic_slice_in_dim(x, start, window[3], window[1])
        return _getitem_xla(ns, x, *tensors, spec=_without_window(spec, window))
    index = lowered_index(ns, shape, spec, tensors)
    axes = _empty_axes_run_indexes(spec, tensors, shape)
    if axes:
        # A stand-in with one row on those axes, so that the indexing compiles;
        # a run reaching it is numpy's IndexError: it runs again on numpy.
        ns.check_on_numpy(ns.jnp.zeros((), np.bool_))
        x = ns.jnp.zeros(tuple(1 if i in axes else d for i, d in enumerate(shape)), x.dtype)
    if isinstance(x, np.ndarray):  # a constant of the program: numpy cannot take traced indices
        x = ns.jnp.asarray(x)
    return x[index]


def _getitem_grad_xla(ns, g, x, *tensors, spec):
    return _scattered(ns, g, tuple(x.shape), tensors, spec)


def _scattered(ns, g, shape, tensors, spec):
    """Zeros of `shape` with `g` added where `spec` indexes."""
    window = _window(ns, shape, spec, tensors)
    if window is not None:  # into the window, placed at its start
        start = _in_window(ns, shape, window)
        inner = list(shape)
        inner[window[1]] = window[3]
        inner = _scattered(ns, g, tuple(inner), tensors, _without_window(spec, window))
        return ns.lax.dynamic_update_slice_in_dim(ns.jnp.zeros(shape, g.dtype), inner, start,
                                                  window[1])
    index = lowered_index(ns, shape, spec, tensors)
    if _empty_axes_run_indexes(spec, tensors, shape):
        return ns.jnp.zeros(shape, g.dtype)  # (its forward never ran)
    return ns.jnp.zeros(shape, g.dtype).at[index].add(g)  # duplicates accumulate



register_lowering("xla", "set_item", _xla)


register_lowering("xla", "getitem", _getitem_xla)
register_lowering("xla", "getitem_grad", _getitem_grad_xla)


# ---- on tensor arrays (`_tensor_arrays`): the "tensor_array" variant -----------------
def _getitem(ns, rule, x, *tensors, spec):
    """`arr[i]` (then any index of the row) or `arr[start:stop]` (the rule
    indexes the array: `TensorArray.__getitem__`). A row index outside the
    run-time length sends the run to numpy, which raises numpy's
    IndexError, where XLA would clamp it to the last row."""
    if not ns.is_tensor_array(x) or any(ns.is_tensor_array(t) for t in tensors):
        raise ns.Unsupported("it indexes with a tensor array")
    kind = spec[0][0] if spec else None
    i = spec[0][1] if kind == "int" else tensors[spec[0][1]] if kind == "tensor" else None
    if i is not None and getattr(i, "ndim", 0) == 0:
        ns.check_on_numpy((i < x.length) & (i >= -x.length))
    return rule(ns, x, *tensors, spec=spec)


def _getitem_grad(ns, rule, g, x, *tensors, spec):
    """The cotangent of `arr[i]` (then any index of the row) or of
    `arr[start:stop]` (`TensorArray.__getitem__`): zeros shaped like the
    array, the cotangent at the rows read (a run-time index as the forward
    clamped it)."""
    if not ns.is_tensor_array(x) or x.axis != 0 or not spec or (
            ns.is_tensor_array(g) and g.axis != 0):
        raise ns.Unsupported("a gradient of indexing a tensor array other than by a leading "
                          "integer or a slice with integer bounds")
    kind = spec[0][0]
    if any(ns.is_tensor_array(t) for t in tensors):
        raise ns.Unsupported("it indexes with a tensor array")
    if spec == (("slice", None, None, -1),):  # `reversed(outs)`: its own inverse
        if not ns.is_tensor_array(g):  # a cotangent from the host: the reversed rows
            ns.check_on_numpy(x.length == g.shape[0])
            g = ns.TensorArray(ns.unshift_rows(g, 0, x.capacity), x.length, x.base)
        return g.reversed_rows()
    if kind == "slice" and len(spec) == 1 and not tensors:
        start, length = x.slice_bounds(slice(*spec[0][1:]))
        if ns.is_tensor_array(g):
            rows = _filled(ns, g, 0)
        else:  # a cotangent from the host: its rows are the slice's
            ns.check_on_numpy(length == g.shape[0])
            rows = g
        return ns.TensorArray(ns.unshift_rows(rows, start, x.capacity), x.length, x.base)
    i = spec[0][1] if kind == "int" else tensors[spec[0][1]] if kind == "tensor" else None
    if i is None or getattr(i, "ndim", 0) != 0 or ns.is_tensor_array(g):
        raise ns.Unsupported("a gradient of indexing a tensor array other than by a leading "
                          "integer or a slice with integer bounds")
    row = g if len(spec) == 1 else rule(ns, g, ns.jnp.zeros(x.buf.shape[1:], g.dtype), *tensors,
                                        spec=spec[1:])
    buf = ns.jnp.zeros(x.buf.shape, g.dtype)
    at = (x.row_index(i),) + (0,) * (buf.ndim - 1)
    return ns.TensorArray(ns.lax.dynamic_update_slice(buf, row[None], at), x.length, x.base)


register_lowering("xla", "getitem", _getitem, variant="tensor_array")
register_lowering("xla", "getitem_grad", _getitem_grad, variant="tensor_array")
