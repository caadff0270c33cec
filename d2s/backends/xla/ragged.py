"""Ordinary ops reading a tensor array (`values.TensorArray`).

A list appended to in a tensor loop or under a tensor `if` is a buffer of
fixed capacity whose first `length` entries along `axis` are the value
(`stack(outs)`: axis 0; `stack(outs, axis=1)`: a transpose moves it). What
lies past the length (zeros, or what an op made of zeros) is never read as
a value, so most ops apply to the whole buffer and keep the array's length:

* elementwise ops and casts (an entry past the length stays past it);
* a reduction over other axes; `transpose`, `unsqueeze`, `squeeze` of other
  axes (the array's axis moves with them); `flatten` starting at the
  array's axis (`concat(outs, axis=k)`: a prefix of the merged dim stays the
  value's prefix); `matmul` that does not contract the array's axis;
* the gradients' shape ops (`broadcast_like`, `reshape_like`, `numel`).

A reduction over the array's axis, an `argmax` over it, and a `matmul`
contracting it, first set the entries past the length to the reduction's
identity (0 for sums; -inf/+inf for max/min): the result is a plain array,
as numpy's. A softmax over the length sets them to -inf first (exp gives 0)
and to 0 after; a cross entropy over rows along it makes each row past it
one whose loss is exactly 0. `arr[i]` and `arr[start:stop]` (integer bounds, step 1)
index the buffer (`TensorArray.__getitem__`), and their gradients put the
cotangent back at the rows read. Where numpy raises (the max or softmax of
an empty array, a row index past the length, which XLA would clamp, two
arrays of different lengths that numpy would broadcast or reject) the run
goes to numpy (`check_on_numpy`). Anything else reading an array is
`Unsupported`: the program runs on numpy.
"""
from __future__ import annotations

import numpy as np

from ...core.registry import OPS
from ._jax import jnp, lax
from .errors import Unsupported
from .values import TensorArray, unshift_rows



def lower_array_op(ns, op, rule, args, attrs):
    """`op`'s result when some of `args` are tensor arrays (see the module
    doc), or `Unsupported`."""
    handler = _HANDLERS.get(op.type)
    if handler is None and OPS[op.type].elementwise:  # its rule applies to a buffer as is
        handler = _elementwise
    if handler is None:
        raise Unsupported("it reads a tensor array, whose length is a run-time value", op)
    try:
        return handler(ns, rule, *args, **attrs)
    except Unsupported:
        raise
    except Exception as e:  # noqa: BLE001 - e.g. shapes numpy rejects: numpy decides
        raise Unsupported(f"reading a tensor array, it raised {type(e).__name__} ({e})",
                          op) from None


def _mask(arr):
    """True at the entries of `arr.buf` within its length (broadcastable)."""
    shape = [1] * arr.buf.ndim
    shape[arr.axis] = arr.buf.shape[arr.axis]
    return (lax.broadcasted_iota(np.int64, tuple(shape), arr.axis) < arr.length)


def _padded(arr, capacity):
    """The array's buffer with `capacity` entries along its axis."""
    extra = capacity - arr.buf.shape[arr.axis]
    if extra <= 0:
        return arr.buf
    pad = [(0, 0)] * arr.buf.ndim
    pad[arr.axis] = (0, extra)
    return jnp.pad(arr.buf, pad)


def _filled(arr, value):
    """The buffer with `value` past the length."""
    return jnp.where(_mask(arr), arr.buf, jnp.asarray(value, arr.buf.dtype))


def _as_plain(ns, arr, n):
    """The array as a plain one of length `n` (a plain operand's dim lined up with
    its length: a cotangent from the host, say); another length at run time
    is numpy's to broadcast or reject."""
    ns.check_on_numpy(arr.length == n)
    have = arr.buf.shape[arr.axis]
    if n <= have:
        return lax.slice_in_dim(arr.buf, 0, n, axis=arr.axis)
    return _padded(arr, n)


def _fixed_length(args, axis, ndim):
    """The dim a plain operand lines up with an array's `axis` (not 1), or None."""
    for a in args:
        if isinstance(a, TensorArray):
            continue
        shape = getattr(a, "shape", ())
        at = axis - (ndim - len(shape))
        if at >= 0 and shape[at] != 1:
            return shape[at]
    return None


def _elementwise(ns, rule, *args, **attrs):
    arrays = [a for a in args if isinstance(a, TensorArray)]
    first = arrays[0]
    ndim = max(getattr(a, "ndim", 0) for a in args)
    if any(a.ndim != ndim or a.axis != first.axis for a in arrays):
        raise Unsupported("an elementwise op broadcasts tensor arrays of different ranks")
    axis = first.axis
    fixed = _fixed_length(args, axis, ndim)
    if fixed is not None:  # the length is known here: plain arrays
        return rule(ns, *[_as_plain(ns, a, fixed) if isinstance(a, TensorArray) else a
                          for a in args], **attrs)
    capacity = max(a.buf.shape[axis] for a in arrays)
    for a in arrays[1:]:  # numpy broadcasts or rejects other lengths: it decides
        ns.check_on_numpy(a.length == first.length)
    out = rule(ns, *[_padded(a, capacity) if isinstance(a, TensorArray) else a
                     for a in args], **attrs)
    return TensorArray(out, first.length, first.base, axis)


def _reduced(ns, rule, x, axes, keepdim, identity):
    """A reduction (`rule`) of an array over `axes`: masked when they hold its axis."""
    if x.axis in axes:
        return rule(ns, _filled(x, identity(x.buf.dtype)), axes=axes, keepdim=keepdim)
    out = rule(ns, x.buf, axes=axes, keepdim=keepdim)
    axis = x.axis if keepdim else x.axis - sum(1 for a in axes if a < x.axis)
    return TensorArray(out, x.length, x.base, axis)


def _sum(ns, rule, x, axes, keepdim):
    return _reduced(ns, rule, x, axes, keepdim, lambda dtype: 0)


def _mean(ns, rule, x, axes, keepdim):
    if x.axis not in axes:
        return _reduced(ns, rule, x, axes, keepdim, None)
    # the mean rule's own result dtype (an int mean is float64); XLA drops the value
    dtype = rule(ns, x.buf, axes=axes, keepdim=keepdim).dtype
    total = jnp.sum(_filled(x, 0), axis=axes, keepdims=keepdim, dtype=dtype)
    count = x.length * int(np.prod([x.buf.shape[a] for a in axes if a != x.axis],
                                   dtype=np.int64))
    return (total.astype(dtype) / count.astype(dtype)).astype(dtype)


def _extreme_identity(dtype, lowest):
    """The value no entry is below (`lowest`: the max's identity) or above."""
    if dtype.kind == "f":
        return -np.inf if lowest else np.inf
    if dtype.kind not in "iu":
        return not lowest  # bools: False is the max's identity
    info = np.iinfo(dtype)
    return info.min if lowest else info.max


def _extreme(lowest):
    def handler(ns, rule, x, axes, keepdim):
        if x.axis in axes:  # numpy raises for the max of nothing
            ns.check_on_numpy(x.length > 0)
        return _reduced(ns, rule, x, axes, keepdim,
                        lambda dtype: _extreme_identity(dtype, lowest))
    return handler


def _transpose(ns, rule, x, perm):
    return TensorArray(jnp.transpose(x.buf, perm), x.length, x.base, list(perm).index(x.axis))


def _unsqueeze(ns, rule, x, axes):
    out = jnp.expand_dims(x.buf, axes)
    kept = [i for i in range(out.ndim) if i not in axes]
    return TensorArray(out, x.length, x.base, kept[x.axis])


def _squeeze(ns, rule, x, axes):
    if x.axis in axes:
        raise Unsupported("it squeezes a tensor array's run-time length")
    out = jnp.squeeze(x.buf, axes) if axes else x.buf
    return TensorArray(out, x.length, x.base, x.axis - sum(1 for a in axes if a < x.axis))


def _flatten(ns, rule, x, start, stop):
    if start == x.axis:  # `concat(outs, axis=k)`: a prefix stays a prefix
        return x.merged_rows(stop - start)
    if stop < x.axis:
        out = rule(ns, x.buf, start=start, stop=stop)
        return TensorArray(out, x.length, x.base, x.axis - (stop - start))
    if start > x.axis:
        return TensorArray(rule(ns, x.buf, start=start, stop=stop), x.length, x.base, x.axis)
    raise Unsupported("it flattens a tensor array's run-time length into an earlier dim")


def _reshape(ns, rule, x, *dims, shape):
    """`reshape` that merges the array's axis with the dims after it (`-1` there,
    the others kept: `concat(outs).reshape([-1])`): a prefix stays a prefix."""
    spec, buf, a = list(shape), x.buf.shape, x.axis
    if dims or spec.count(-1) != 1 or spec.index(-1) != a:
        raise Unsupported("it reshapes a tensor array other than by merging its run-time "
                          "length with the dims after it")
    before, after = spec[:a], spec[a + 1:]
    stop = len(buf) - len(after)
    if stop < a + 1 or any(d not in (0, b) for d, b in zip(before, buf[:a])) or (
            tuple(after) != tuple(buf[stop:])):
        raise Unsupported("it reshapes a tensor array other than by merging its run-time "
                          "length with the dims after it")
    return x.merged_rows(stop - a - 1)


def _matmul(ns, rule, x, y):
    xa, ya = isinstance(x, TensorArray), isinstance(y, TensorArray)
    if xa and ya:  # contracting the run-time length: x's last axis, y's rows
        if x.axis != x.ndim - 1 or y.ndim < 2 or y.axis != y.ndim - 2:
            raise Unsupported("a matmul of two tensor arrays other than over their length")
        ns.check_on_numpy(x.length == y.length)
        capacity = max(x.buf.shape[x.axis], y.buf.shape[y.axis])
        xs = _padded(TensorArray(jnp.where(_mask(x), x.buf, 0), x.length, x.base, x.axis),
                     capacity)
        ys = _padded(TensorArray(jnp.where(_mask(y), y.buf, 0), y.length, y.base, y.axis),
                     capacity)
        return rule(ns, xs, ys)
    if xa and x.ndim >= 2 and x.axis < x.ndim - 1 and y.ndim <= 2:
        return TensorArray(rule(ns, x.buf, y), x.length, x.base, x.axis)
    if ya and y.ndim >= 2 and y.axis == y.ndim - 1 and x.ndim <= 2:
        return TensorArray(rule(ns, x, y.buf), y.length, y.base,
                           y.axis - (1 if x.ndim == 1 else 0))
    if xa and x.axis == x.ndim - 1 and y.ndim >= 2:  # contracting with y's rows
        return rule(ns, _as_plain(ns, x, y.shape[-2]), y)
    if ya and y.ndim >= 2 and y.axis == y.ndim - 2:
        return rule(ns, x, _as_plain(ns, y, x.shape[-1]))
    raise Unsupported("a matmul that contracts a tensor array's run-time length with a "
                      "plain array")


def _broadcast_like(ns, rule, g, x):
    if isinstance(g, TensorArray):
        return _elementwise(ns, rule, g, x)
    at = x.axis + g.ndim - x.ndim
    if at >= 0 and g.shape[at] != 1:  # `g` holds the length (a cotangent from the host)
        ns.check_on_numpy(x.length == g.shape[at])
        like = list(x.buf.shape)
        like[x.axis] = g.shape[at]
        return jnp.broadcast_to(g, np.broadcast_shapes(g.shape, tuple(like)))
    shape = np.broadcast_shapes(g.shape, x.buf.shape)
    return TensorArray(jnp.broadcast_to(g, shape), x.length, x.base,
                       x.axis + len(shape) - x.ndim)


def _sum_to_like(ns, rule, g, x):
    """The gradient of broadcasting: `g` summed over the axes `x` was broadcast
    along. Against an array `x`, its run-time length is never one of them
    (the forward broadcast no fixed dim against it: see `_elementwise`)."""
    if not isinstance(x, TensorArray):
        lead = g.ndim - x.ndim
        at = g.axis - lead
        if at >= 0 and x.shape[at] != 1:  # pragma: no cover - the program's shapes say no
            raise Unsupported("it sums a tensor array to a fixed dim")
        return rule(ns, _filled(g, 0), x)
    buf = g.buf if isinstance(g, TensorArray) else g
    lead = buf.ndim - x.ndim
    if isinstance(g, TensorArray) and g.axis - lead != x.axis:
        raise Unsupported("it sums a cotangent to a tensor array's shape")
    ns.check_on_numpy((g.length if isinstance(g, TensorArray) else buf.shape[x.axis + lead])
                      == x.length)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, d in enumerate(x.buf.shape)
        if i != x.axis and d == 1 and buf.shape[i + lead] != 1)
    out = jnp.sum(buf, axis=axes, keepdims=True, dtype=buf.dtype) if axes else buf
    out = out.reshape(out.shape[lead:])
    return TensorArray(out, g.length, g.base, x.axis) if isinstance(g, TensorArray) else out


def _reshape_like(ns, rule, g, x):
    if isinstance(x, TensorArray) and not isinstance(g, TensorArray):
        rest = [d for i, d in enumerate(x.buf.shape) if i != x.axis]
        row = int(np.prod(rest, dtype=np.int64))
        if row == 0 or g.size % row:
            raise Unsupported("it reshapes to the shape of a tensor array, whose length "
                              "is a run-time value")
        ns.check_on_numpy(x.length * row == g.size)
        shape = list(x.buf.shape)
        shape[x.axis] = g.size // row
        return g.reshape(shape)
    if isinstance(x, TensorArray) and isinstance(g, TensorArray) and (
            g.buf.size == x.buf.size and g.buf.shape[:g.axis] == x.buf.shape[:x.axis]):
        return TensorArray(g.buf.reshape(x.buf.shape), x.length, x.base, x.axis)
    raise Unsupported("it reshapes a tensor array, whose length is a run-time value")


def _numel(ns, rule, x, axes=None):
    axes = range(x.ndim) if axes is None else axes
    n = np.int64(1)
    for a in axes:
        n = n * (x.length if a == x.axis else np.int64(x.buf.shape[a]))
    return jnp.asarray(n, np.int64)


def _normalized(log):
    """softmax (`log`: log_softmax) of an array: over another axis, each entry
    past the length is a row of its own, never read; over its length, those
    entries are -inf first (exp gives 0) and 0 after, as a sum's padding."""
    def handler(ns, rule, x, axis):
        if axis != x.axis:
            return TensorArray(rule(ns, x.buf, axis=axis), x.length, x.base, x.axis)
        ns.check_on_numpy(x.length > 0)  # numpy raises for the max of nothing
        if x.dtype.kind != "f":
            raise Unsupported("it normalizes a tensor array of integers over its length")
        out = rule(ns, _filled(x, -np.inf), axis=axis)
        return TensorArray(jnp.where(_mask(x), out, jnp.zeros((), out.dtype)), x.length,
                           x.base, x.axis)
    return handler


def _argmax(ns, rule, x, axis, keepdim):
    """`argmax` over the array's length: the entries past it are the lowest
    value, after every entry within it (the first of equal maxima is numpy's
    and XLA's answer). Over all entries: the flat index is numpy's when the
    length is the outermost axis (the padding then comes last)."""
    if axis is None and x.axis != 0:
        raise Unsupported("an argmax over all entries of a tensor array whose length is "
                          "not its first axis")
    if axis is not None and axis != x.axis:
        out = rule(ns, x.buf, axis=axis, keepdim=keepdim)
        return TensorArray(out, x.length, x.base, x.axis if keepdim or axis > x.axis
                           else x.axis - 1)
    ns.check_on_numpy(x.length > 0)  # numpy raises for the argmax of nothing
    return rule(ns, _filled(x, _extreme_identity(x.dtype, lowest=True)), axis=axis,
                keepdim=keepdim)


def _rows_of(ns, arrays_and_plain):
    """The operands with their first axis lined up: a plain one's rows fix the
    length (the arrays made plain: `_as_plain`), else the arrays padded to one
    capacity, with their common run-time length (numpy rejects two lengths:
    it decides). -> (operands, length or None when plain)."""
    arrays = [a for a in arrays_and_plain if isinstance(a, TensorArray)]
    if any(a.axis != 0 for a in arrays):
        raise Unsupported("it reads a tensor array whose length is not its first axis")
    plain = [a for a in arrays_and_plain if not isinstance(a, TensorArray)]
    if plain:
        n = plain[0].shape[0]
        return [_as_plain(ns, a, n) if isinstance(a, TensorArray) else a
                for a in arrays_and_plain], None
    capacity = max(a.capacity for a in arrays)
    for a in arrays[1:]:
        ns.check_on_numpy(a.length == arrays[0].length)
    return [_padded(a, capacity) for a in arrays_and_plain], arrays[0].length


def _cross_entropy(ns, rule, logits, label):
    """The mean over the rows within the length. Each row past it is made one
    whose loss is exactly 0 (logits 0 at class 0 and -inf elsewhere, label
    0), so the rule's mean over the buffer times capacity / length is the
    mean over the rows; their probabilities are 0."""
    (logits, label), length = _rows_of(ns, [logits, label])
    if length is None:
        return rule(ns, logits, label)
    rows = lax.broadcasted_iota(np.int64, (label.shape[0],), 0) < length
    if logits.dtype.kind != "f":
        raise Unsupported("it takes the cross entropy of integer logits in a tensor array")
    classes = lax.broadcasted_iota(np.int64, (1, logits.shape[1]), 1)
    empty_row = jnp.where(classes == 0, 0, -np.inf).astype(logits.dtype)
    logits = jnp.where(rows[:, None], logits, empty_row)
    label = jnp.where(rows, label, jnp.zeros((), label.dtype))
    loss, probs = rule(ns, logits, label)
    loss = loss * (label.shape[0] / length.astype(loss.dtype))
    probs = jnp.where(rows[:, None], probs, jnp.zeros((), probs.dtype))
    return loss.astype(logits.dtype), TensorArray(probs, length, label.shape[0])


def _cross_entropy_grad(ns, rule, g, probs, label):
    """(probs - onehot(label)) * g / length at the rows within the length."""
    (probs, label), length = _rows_of(ns, [probs, label])
    if length is None:
        return rule(ns, g, probs, label)
    rows = lax.broadcasted_iota(np.int64, (label.shape[0],), 0) < length
    label = jnp.where(rows, label, jnp.zeros((), label.dtype))
    per_row = rule(ns, g * label.shape[0] / length.astype(g.dtype), probs, label)
    return TensorArray(jnp.where(rows[:, None], per_row, jnp.zeros((), per_row.dtype)),
                       length, label.shape[0])


def _getitem(ns, rule, x, *tensors, spec):
    """`arr[i]` (then any index of the row) or `arr[start:stop]` (the rule
    indexes the array: `TensorArray.__getitem__`). A row index outside the
    run-time length sends the run to numpy, which raises numpy's
    IndexError, where XLA would clamp it to the last row."""
    if not isinstance(x, TensorArray) or any(isinstance(t, TensorArray) for t in tensors):
        raise Unsupported("it indexes with a tensor array")
    kind = spec[0][0] if spec else None
    i = spec[0][1] if kind == "int" else tensors[spec[0][1]] if kind == "tensor" else None
    if i is not None and getattr(i, "ndim", 0) == 0:
        ns.check_on_numpy((i < x.length) & (i >= -x.length))
    return rule(ns, x, *tensors, spec=spec)


def _row_of(ns, x, index, axis):
    """The run-time row `index` (negative: from the length) picks along the
    array's length; numpy's IndexError (via numpy) outside it."""
    if not isinstance(x, TensorArray) or isinstance(index, TensorArray) or axis != x.axis \
            or x.axis != 0 or getattr(index, "ndim", 1) != 0:
        raise Unsupported("a gather from a tensor array other than of one row along its length")
    ns.check_on_numpy((index < x.length) & (index >= -x.length))
    return x.row_index(index)


def _gather(ns, rule, x, index, axis):
    """`gather(arr, i, axis=0)` for a scalar `i`: one row (`max(outs)`)."""
    return rule(ns, x.buf, _row_of(ns, x, index, axis), axis=axis)


def _gather_grad(ns, rule, g, x, index, axis):
    if isinstance(g, TensorArray):
        raise Unsupported("a gather cotangent that is itself a tensor array")
    buf = rule(ns, g, x.buf, _row_of(ns, x, index, axis), axis=axis)
    return TensorArray(buf, x.length, x.base, x.axis)


def _getitem_grad(ns, rule, g, x, *tensors, spec):
    """The cotangent of `arr[i]` (then any index of the row) or of
    `arr[start:stop]` (`TensorArray.__getitem__`): zeros shaped like the
    array, the cotangent at the rows read (a run-time index as the forward
    clamped it)."""
    if not isinstance(x, TensorArray) or x.axis != 0 or not spec or (
            isinstance(g, TensorArray) and g.axis != 0):
        raise Unsupported("a gradient of indexing a tensor array other than by a leading "
                          "integer or a slice with integer bounds")
    kind = spec[0][0]
    if any(isinstance(t, TensorArray) for t in tensors):
        raise Unsupported("it indexes with a tensor array")
    if spec == (("slice", None, None, -1),) and isinstance(g, TensorArray):
        return g.reversed_rows()  # `reversed(outs)`: its own inverse
    if kind == "slice" and len(spec) == 1 and not tensors:
        start, length = x.slice_bounds(slice(*spec[0][1:]))
        if isinstance(g, TensorArray):
            rows = _filled(g, 0)
        else:  # a cotangent from the host: its rows are the slice's
            ns.check_on_numpy(length == g.shape[0])
            rows = g
        return TensorArray(unshift_rows(rows, start, x.capacity), x.length, x.base)
    i = spec[0][1] if kind == "int" else tensors[spec[0][1]] if kind == "tensor" else None
    if i is None or getattr(i, "ndim", 0) != 0 or isinstance(g, TensorArray):
        raise Unsupported("a gradient of indexing a tensor array other than by a leading "
                          "integer or a slice with integer bounds")
    row = g if len(spec) == 1 else rule(ns, g, jnp.zeros(x.buf.shape[1:], g.dtype), *tensors,
                                        spec=spec[1:])
    buf = jnp.zeros(x.buf.shape, g.dtype)
    at = (x.row_index(i),) + (0,) * (buf.ndim - 1)
    return TensorArray(lax.dynamic_update_slice(buf, row[None], at), x.length, x.base)


_HANDLERS = {
    "sum": _sum, "mean": _mean, "max": _extreme(True), "min": _extreme(False),
    "transpose": _transpose, "unsqueeze": _unsqueeze, "squeeze": _squeeze,
    "flatten": _flatten, "reshape": _reshape, "matmul": _matmul, "broadcast_like": _broadcast_like,
    "sum_to_like": _sum_to_like, "reshape_like": _reshape_like, "numel": _numel,
    "softmax": _normalized(False), "log_softmax": _normalized(True), "argmax": _argmax,
    "getitem": _getitem, "getitem_grad": _getitem_grad, "gather": _gather,
    "gather_grad": _gather_grad,
    "cross_entropy": _cross_entropy, "cross_entropy_grad": _cross_entropy_grad,
}
