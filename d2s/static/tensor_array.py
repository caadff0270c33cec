"""Tensor arrays: Python lists appended to inside a loop on a tensor.

A tensor array is a Variable with `is_array=True` whose axis 0 holds the
appended values (length unknown until run time). `d2s.stack(arr)` is the
array itself, `arr[i]` (negative `i` too: it counts from the current end)
and `len(arr)` work as on any Variable. A list that
enters a static loop is wrapped as a `PendingArray`; the loop builder turns
it into an array Variable once the body shows what is appended.
"""
from __future__ import annotations

import numpy as np

from ..core.dispatch import bind
from ..core.ops import cast, lift, stack
from ..core.registry import Aval, register_op
from .ir import Variable


class PendingArray:
    """A Python list carried into a loop on a tensor (not yet an array).

    The loop's first trace of its body sees this: reads (`feats[-1]`,
    `len(feats)`) answer from the list's items, which is all that trace
    needs (it only learns what the body appends); later traces see the array
    Variable, whose reads happen at run time."""

    def __init__(self, items):
        self.items = list(items)
        self.indexed = False

    def __getitem__(self, index):
        return self.items[index]

    def __setitem__(self, index, value):
        """`lst[i] = v` in the body: a list used by index, not appended to
        (per-layer caches); the loop then keeps the list itself and carries
        the items written (convert.runtime.loop_items)."""
        self.items[index] = value
        self.indexed = True

    def __len__(self):
        return len(self.items)

    def __repr__(self):
        return f"PendingArray({len(self.items)} items)"


def is_tensor_array(x):
    return isinstance(x, Variable) and x.is_array


def _append_kernel(buf, value):
    if buf.shape[0] == 0:  # an empty array's trailing dims are placeholders
        return value[None].astype(buf.dtype, copy=False)
    return np.concatenate([buf, value[None].astype(buf.dtype, copy=False)])


def _append_infer(buf, value):
    return Aval((None,) + tuple(value.shape), buf.dtype)


def _append_vjp(g, out, buf, value):
    from ..core.ops import getitem
    return getitem(g, slice(None, -1)), cast(getitem(g, -1), value.dtype)


# Append `value` along a new axis 0 of the array `buf`.
register_op("array_append", _append_kernel, _append_infer, _append_vjp)


def _mark(v):
    v.is_array = True
    v.shape = (None,) + tuple(v.shape[1:])  # an array's length is a run-time fact
    return v


def array_append(arr, value):
    value = lift(value)
    if isinstance(arr, PendingArray):
        # First trace of a loop body: the array is not carried yet; this value
        # only tells the loop builder what the array holds.
        return _mark(stack(arr.items + [value]))
    if value.dtype != arr.dtype:
        value = cast(value, arr.dtype)
    return _mark(bind("array_append", arr, value))


def array_prepend(arr, value):
    """`lst.insert(0, value)` on an array (returns computed backwards, each
    put in front): the array reversed, `value` appended, reversed back --
    ops every backend and the gradient already have."""
    from ..core.ops import getitem
    value = lift(value)
    if isinstance(arr, PendingArray):
        return _mark(stack([value] + arr.items))
    flipped = _mark(getitem(arr, slice(None, None, -1)))
    return _mark(getitem(array_append(flipped, value), slice(None, None, -1)))


def array_extend(arr, values):
    """`arr += values` (a list literal in converted code) on an array: one
    append per value."""
    for value in values:
        arr = array_append(arr, value)
    return arr


def array_init(pending, element):
    """The array a loop starts from: the list's current items, or an empty array
    shaped for `element` (unknown dims become 0; nothing reads them)."""
    if pending.items:
        return _mark(stack([cast(lift(x), element.dtype) for x in pending.items]))
    shape = (0,) + tuple(0 if d is None else d for d in element.shape[1:])
    return _mark(bind("full", shape=shape, fill_value=0, dtype=np.dtype(element.dtype).name))


def array_pop(arr, index=-1):
    """`arr.pop(index)` of a tensor array: (the shorter array, the row taken).

    A tensor array is a program value, never changed in place, so the caller
    rebinds the list's name to the shorter array (`lists.convert_list_pop`).
    `index` is a Python int (the row to take must be known when the program
    is built; its length need not be: `-1` is the last row at run time). The
    first and last rows leave a slice, which every backend runs; another row
    leaves the two parts around it joined."""
    import operator
    from ..core.ops import concat, getitem
    try:
        index = operator.index(index)
    except TypeError:
        raise TypeError(
            f"pop(i) of a list carried as a tensor array needs a Python int index, "
            f"got {type(index).__name__}: read the row with `lst[i]` and build the "
            f"shorter list with `d2s.concat([lst[:i], lst[i + 1:]])`") from None
    value = getitem(arr, index)
    if index == -1:
        rest = getitem(arr, slice(None, -1))
    elif index == 0:
        rest = getitem(arr, slice(1, None))
    else:   # on xla, a concat of two parts of unknown length runs on numpy
        rest = concat([getitem(arr, slice(None, index)), getitem(arr, slice(index + 1, None))])
    return _mark(rest), value
