"""What the xla rules of ops reading a tensor array share (the rules
registered with `variant="tensor_array"`, applied by `backends/xla/ragged.py`).

A list appended to in a tensor loop or under a tensor `if` is a buffer of
fixed capacity whose first `length` entries along `axis` are the value
(`ns.TensorArray`; `stack(outs)`: axis 0; `stack(outs, axis=1)`: a
transpose moves it). What lies past the length (zeros, or what an op made of
zeros) is never read as a value, so most ops apply to the whole buffer and
keep the array's length:

* elementwise ops and casts (an entry past the length stays past it): any op
  declared `elementwise` takes `_elementwise` here, with its own rule;
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

A tensor-array rule is `rule(ns, plain_rule, *inputs, **attrs)`: `plain_rule`
is the op's own xla rule, which it applies to buffers.
"""
from __future__ import annotations

import numpy as np


def _mask(ns, arr):
    """True at the entries of `arr.buf` within its length (broadcastable)."""
    shape = [1] * arr.buf.ndim
    shape[arr.axis] = arr.buf.shape[arr.axis]
    return (ns.lax.broadcasted_iota(np.int64, tuple(shape), arr.axis) < arr.length)


def _padded(ns, arr, capacity):
    """The array's buffer with `capacity` entries along its axis."""
    extra = capacity - arr.buf.shape[arr.axis]
    if extra <= 0:
        return arr.buf
    pad = [(0, 0)] * arr.buf.ndim
    pad[arr.axis] = (0, extra)
    return ns.jnp.pad(arr.buf, pad)


def _filled(ns, arr, value):
    """The buffer with `value` past the length."""
    return ns.jnp.where(_mask(ns, arr), arr.buf, ns.jnp.asarray(value, arr.buf.dtype))


def _as_plain(ns, arr, n):
    """The array as a plain one of length `n` (a plain operand's dim lined up with
    its length: a cotangent from the host, say); another length at run time
    is numpy's to broadcast or reject."""
    ns.check_on_numpy(arr.length == n)
    have = arr.buf.shape[arr.axis]
    if n <= have:
        return ns.lax.slice_in_dim(arr.buf, 0, n, axis=arr.axis)
    return _padded(ns, arr, n)


def _fixed_length(ns, args, axis, ndim):
    """The dim a plain operand lines up with an array's `axis` (not 1), or None."""
    for a in args:
        if ns.is_tensor_array(a):
            continue
        shape = getattr(a, "shape", ())
        at = axis - (ndim - len(shape))
        if at >= 0 and shape[at] != 1:
            return shape[at]
    return None


def _elementwise(ns, rule, *args, **attrs):
    arrays = [a for a in args if ns.is_tensor_array(a)]
    first = arrays[0]
    ndim = max(getattr(a, "ndim", 0) for a in args)
    if any(a.ndim != ndim or a.axis != first.axis for a in arrays):
        raise ns.Unsupported("an elementwise op broadcasts tensor arrays of different ranks")
    axis = first.axis
    fixed = _fixed_length(ns, args, axis, ndim)
    if fixed is not None:  # the length is known here: plain arrays
        return rule(ns, *[_as_plain(ns, a, fixed) if ns.is_tensor_array(a) else a
                          for a in args], **attrs)
    capacity = max(a.buf.shape[axis] for a in arrays)
    for a in arrays[1:]:  # numpy broadcasts or rejects other lengths: it decides
        ns.check_on_numpy(a.length == first.length)
    out = rule(ns, *[_padded(ns, a, capacity) if ns.is_tensor_array(a) else a
                     for a in args], **attrs)
    return ns.TensorArray(out, first.length, first.base, axis)


def _extreme_identity(dtype, lowest):
    """The value no entry is below (`lowest`: the max's identity) or above."""
    if dtype.kind == "f":
        return -np.inf if lowest else np.inf
    if dtype.kind not in "iu":
        return not lowest  # bools: False is the max's identity
    info = np.iinfo(dtype)
    return info.min if lowest else info.max


def _rows_of(ns, arrays_and_plain):
    """The operands with their first axis lined up: a plain one's rows fix the
    length (the arrays made plain: `_as_plain`), else the arrays padded to one
    capacity, with their common run-time length (numpy rejects two lengths:
    it decides). -> (operands, length or None when plain)."""
    arrays = [a for a in arrays_and_plain if ns.is_tensor_array(a)]
    if any(a.axis != 0 for a in arrays):
        raise ns.Unsupported("it reads a tensor array whose length is not its first axis")
    plain = [a for a in arrays_and_plain if not ns.is_tensor_array(a)]
    if plain:
        n = plain[0].shape[0]
        return [_as_plain(ns, a, n) if ns.is_tensor_array(a) else a
                for a in arrays_and_plain], None
    capacity = max(a.capacity for a in arrays)
    for a in arrays[1:]:
        ns.check_on_numpy(a.length == arrays[0].length)
    return [_padded(ns, a, capacity) for a in arrays_and_plain], arrays[0].length
