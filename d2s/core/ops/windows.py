"""Windows and crops of a tensor that ported model code calls: unfold
(Paddle's `Tensor.unfold(axis, size, step)`: sliding windows along one
axis) and crop. Compositions of gather / slicing: gradients and backend
forms are those ops'."""
from __future__ import annotations

import numpy as np

from ..shapes import normalize_axis
from ._base import constant, is_value, lift
from .shaping import _dim, _int, _take

__all__ = ["unfold", "crop"]


def unfold(x, axis, size, step, name=None):
    """The windows x[i*step : i*step + size] along `axis`: that axis becomes
    the number of windows and a new last axis of length `size` holds each
    window."""
    from .manipulation import gather, reshape
    from .products import moveaxis
    x = lift(x)
    nd = len(x.shape)
    if nd == 0:
        x, nd = reshape(x, [1]), 1
    axis = normalize_axis(_int(axis, "unfold", "axis"), nd, "unfold")
    size, step = _int(size, "unfold", "size"), _int(step, "unfold", "step")
    n = x.shape[axis]
    if n is None:
        return _unfold_run_time(x, axis, size, step)
    if size < 0 or size > n or step <= 0:
        raise ValueError(f"unfold: size must be in [0, {n}] and step positive, got size={size}, "
                         f"step={step}")
    count = (n - size) // step + 1
    idx = (np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    picked = gather(x, constant(idx.astype(np.int64)), axis=axis)  # axis: count * size
    shape = [_dim(x, i) for i in range(nd)]
    picked = reshape(picked, shape[:axis] + [count, size] + shape[axis + 1:])
    return moveaxis(picked, axis + 1, -1)


def _unfold_run_time(x, axis, size, step):
    """unfold along an axis whose size is known only at run time (a series
    of any length cut into training windows inside `forward`): the window
    count and the gathered positions are computed in the program, and a
    window longer than the axis fails at run time as eagerly."""
    from .creation import arange
    from .manipulation import gather, reshape
    from .products import moveaxis
    from ._base import bind
    if size < 0 or step <= 0:
        raise ValueError(f"unfold: size must be >= 0 and step positive, got size={size}, "
                         f"step={step}")
    n = _dim(x, axis)
    bind("assert", n >= size,
         message=f"unfold: size={size} is larger than the size of axis {axis} of x")
    count = (n - size) // step + 1
    idx = reshape(reshape(arange(count), [-1, 1]) * step + reshape(arange(size), [1, -1]), [-1])
    picked = gather(x, idx, axis=axis)
    shape = [_dim(x, i) for i in range(len(x.shape))]
    picked = reshape(picked, shape[:axis] + [count, size] + shape[axis + 1:])
    return moveaxis(picked, axis + 1, -1)


def crop(x, shape=None, offsets=None, name=None):
    """The block of `x` of `shape` (a -1 keeps the rest of that dim; default
    x's shape) starting at `offsets` (default 0s)."""
    x = lift(x)
    nd = len(x.shape)

    def ints(v, what):
        if v is None:
            return None
        if is_value(v):
            v = np.asarray(v.numpy()).tolist()
        return [_int(i, "crop", what) for i in v]
    shape, offsets = ints(shape, "a size"), ints(offsets, "an offset")
    shape = [-1] * nd if shape is None else shape
    offsets = [0] * nd if offsets is None else offsets
    if len(shape) != nd or len(offsets) != nd:
        raise ValueError(f"crop: shape {shape} and offsets {offsets} need one entry per dim "
                         f"of x {tuple(x.shape)}")
    out = x
    for axis, (s, o) in enumerate(zip(shape, offsets)):
        if o < 0:
            raise ValueError(f"crop: offsets must be >= 0, got {offsets}")
        n = x.shape[axis]
        if s == -1:
            if o:
                out = _take(out, axis, o, None)
            continue
        if n is not None and o + s > n:
            raise ValueError(f"crop: offset {o} + size {s} exceeds dim {axis} of x "
                             f"{tuple(x.shape)}")
        if o or n is None or s != n:
            out = _take(out, axis, o, o + s)
    return out
