"""Shape manipulation built from existing ops: split, chunk, unbind, tile,
broadcast_to, expand_as, flip, roll, tril, triu, meshgrid, slice,
strided_slice.

Each is a function of getitem / expand / reshape / concat / where: the
gradients, shape rules and backend forms are those ops'. A dim unknown
while building is read at run time (`shape(x)[i]`) where the op needs it.
"""
from __future__ import annotations

import numpy as np

import builtins

from ..dispatch import all_eager, bind, run_eager
from ..registry import OPS
from ..shapes import normalize_axis
from ..tensor import Tensor
from ._base import is_value, lift
# (imported here, not in each function: an import statement costs an eager call
# about a microsecond each time it runs)
from .creation import arange
from .elementwise import greater_equal, less_equal, where, zeros_like_
from .indexing import getitem
from .manipulation import concat, expand, flatten, reshape, unsqueeze
from .run_time_pieces import RunTimePieces

__all__ = ["split", "chunk", "unbind", "tile", "broadcast_to", "expand_as", "flip", "roll",
           "tril", "triu", "meshgrid", "slice", "strided_slice"]


def _int(v, opname, what):
    if is_value(v):
        if isinstance(v, Tensor) and v.size == 1:
            return int(v.item())
        raise TypeError(f"{opname}: {what} must be known while building (an int), got a "
                        "tensor computed in the program")
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{opname}: {what} must be an int, got {v!r}")
    return int(v)


def _axis(x, axis, opname):
    return normalize_axis(_int(axis, opname, "axis"), max(len(x.shape), 1), opname)


def _dim(x, i):
    from .search import _dim as dim
    return dim(x, i)


def _take(x, axis, start, stop, step=1):
    if type(start) is int and type(stop) is int and type(step) is int:
        # the spec `getitem` would encode, written directly (split's pieces)
        spec = (_WHOLE,) * axis + (("slice", start, stop, step),)
        if type(x) is Tensor and all_eager[0]:  # `bind`'s eager case, decided here
            return run_eager(_GETITEM, (x,), {"spec": spec})
        return bind("getitem", x, spec=spec)
    return getitem(x, (builtins.slice(None),) * axis + (builtins.slice(start, stop, step),))


_WHOLE = ("slice", None, None, None)  # `:` in an index spec (indexing.encode_index)
_GETITEM = OPS["getitem"]




# ---- split / chunk / unbind ------------------------------------------------------------------
def split(x, num_or_sections, axis=0, name=None):
    """Pieces of `x` along `axis`: `num_or_sections` equal pieces (an int that
    divides the dim), or a list of sizes (one may be -1: the rest)."""
    x = lift(x)
    if not x.shape:
        raise ValueError("split: x must have at least one dim")
    axis = _axis(x, axis, "split")
    n = x.shape[axis]
    if isinstance(num_or_sections, (list, tuple)):
        sizes = [_int(s, "split", "a section size") for s in num_or_sections]
        if sizes.count(-1) > 1:
            raise ValueError(f"split: only one section size may be -1, got {sizes}")
        if any(s < -1 for s in sizes):
            raise ValueError(f"split: section sizes must be >= 0 (or one -1), got {sizes}")
        if n is None:
            raise ValueError(f"split: sections {sizes} need the size of axis {axis} known while "
                             f"building ({tuple(x.shape)}), to check that they cover it; "
                             "split into a number of equal pieces instead")
        if -1 in sizes:
            if n is None:
                raise ValueError("split: a -1 section needs the dim's size known while "
                                 f"building (axis {axis} of {tuple(x.shape)} is not)")
            rest = n - sum(s for s in sizes if s != -1)
            if rest < 0:
                raise ValueError(f"split: sections {sizes} exceed the size {n} of axis {axis}")
            sizes[sizes.index(-1)] = rest
        if n is not None and sum(sizes) != n:
            raise ValueError(f"split: sections {sizes} sum to {sum(sizes)}, but axis {axis} "
                             f"of x {tuple(x.shape)} has size {n}")
        out, start = [], 0
        for s in sizes:
            out.append(_take(x, axis, start, start + s))
            start += s
        return out
    if is_value(num_or_sections) and not isinstance(num_or_sections, Tensor) \
            and tuple(num_or_sections.shape) in ((), (1,)):
        # `x.split(x.shape[1], axis=1)` over an unknown dim: a converted `for` walks them
        return RunTimePieces(x, axis, num_or_sections, False, "split")
    num = _int(num_or_sections, "split", "num_or_sections")
    if num <= 0:
        raise ValueError(f"split: num_or_sections must be positive, got {num}")
    if n is None:  # sizes read at run time: equal pieces of shape(x)[axis] // num
        size = _dim(x, axis) // num
        return [_take(x, axis, size * i, size * (i + 1)) for i in range(num)]
    if n % num:
        raise ValueError(f"split: axis {axis} of x {tuple(x.shape)} (size {n}) does not "
                         f"divide into {num} equal pieces")
    size = n // num
    return [_take(x, axis, size * i, size * (i + 1)) for i in range(num)]


def chunk(x, chunks, axis=0, name=None):
    """`split(x, chunks, axis)`: `chunks` equal pieces."""
    return split(x, chunks, axis)


def unbind(input, axis=0):
    """The slices of `input` along `axis`, each without that axis (its size
    must be known while building)."""
    x = lift(input)
    axis = _axis(x, axis, "unbind")
    n = x.shape[axis] if x.shape else None
    if n is None:  # a converted `for` walks them (`for x_t in x.unbind(1)`)
        return RunTimePieces(x, axis, _dim(x, axis), True, "unbind")
    return [getitem(x, (builtins.slice(None),) * axis + (i,)) for i in range(n)]


# ---- tile / broadcast ------------------------------------------------------------------------
def _sizes(values, opname):
    if is_value(values):
        if isinstance(values, Tensor):
            values = values.numpy().tolist()
        else:
            raise TypeError(f"{opname}: the sizes must be a list (of ints or scalar tensors)")
    return list(values)


def broadcast_to(x, shape, name=None):
    """`x` broadcast to `shape` (Paddle's expand)."""
    return expand(x, shape)


def expand_as(x, y, name=None):
    """`x` broadcast to the shape of `y`."""
    x, y = lift(x), lift(y)
    if None not in tuple(y.shape):
        return expand(x, list(y.shape))
    return bind("broadcast_like", x, y)


def tile(x, repeat_times, name=None):
    """`x` repeated `repeat_times[i]` times along each dim (aligned to x's
    trailing dims; x gains leading dims when the list is longer): copies
    concatenated along each axis, so no dim (known or not) needs reading.
    A repeat count known only at run time (`tile([b])` with `b = x.shape[0]`
    of a `None` batch dim) broadcasts a new axis to that count and merges it
    into the tiled one, which is the same layout."""
    x = lift(x)
    reps = [r if _run_time_int(r) else _int(r, "tile", "a repeat count")
            for r in _sizes(repeat_times, "tile")]
    if any(not _run_time_int(r) and r < 0 for r in reps):
        raise ValueError(f"tile: repeat counts must be >= 0, got {reps}")
    ndim = max(len(reps), len(x.shape))
    reps = [1] * (ndim - len(reps)) + reps
    for _ in range(ndim - len(x.shape)):
        x = unsqueeze(x, 0)
    for axis, r in enumerate(reps):
        if _run_time_int(r):
            x = _tile_run_time(x, axis, r)
        elif r == 0:
            x = _take(x, axis, 0, 0)  # empty along this axis
        elif r > 1:
            x = concat([x] * r, axis=axis)
    return x


def _run_time_int(r):
    """A repeat count computed in the program (not an eager Tensor's value)."""
    return is_value(r) and not isinstance(r, Tensor)


def _tile_run_time(x, axis, r):
    """`x` tiled `r` times along `axis`, `r` a 0-d integer value: the copies
    are a new leading axis broadcast to `r`, merged with `axis`."""
    if tuple(r.shape) not in ((), (1,)) or np.dtype(r.dtype).kind not in "iu":
        raise TypeError(f"tile: a repeat count must be an integer scalar, got shape "
                        f"{list(r.shape)} dtype {r.dtype}")
    ndim = len(x.shape)
    dims = [_dim(x, i) for i in range(ndim)]
    y = expand(unsqueeze(x, axis), dims[:axis] + [reshape(r, [])] + dims[axis:])
    return reshape(y, dims[:axis] + [-1] + dims[axis + 1:])


# ---- flip / roll -----------------------------------------------------------------------------
def flip(x, axis, name=None):
    """`x` reversed along each axis in `axis` (an int or a list)."""
    x = lift(x)
    axes = [axis] if not isinstance(axis, (list, tuple)) else list(axis)
    ndim = len(x.shape)
    axes = sorted({_axis(x, a, "flip") for a in axes})
    if not ndim:
        return x
    index = [builtins.slice(None)] * ndim
    for a in axes:
        index[a] = builtins.slice(None, None, -1)
    return getitem(x, tuple(index))


def roll(x, shifts, axis=None, name=None):
    """`x` shifted circularly by `shifts` along `axis` (over the flattened x,
    then reshaped back, when axis is None)."""
    x = lift(x)
    shifts_l = [shifts] if not isinstance(shifts, (list, tuple)) else list(shifts)
    shifts_l = [_run_time_shift(s) if is_value(s) and not isinstance(s, Tensor)
                else _int(s, "roll", "a shift") for s in shifts_l]
    if axis is None:
        if len(shifts_l) != 1:
            raise ValueError("roll: with axis=None, shifts must be one int")
        if not x.shape:
            return x
        shape = [_dim(x, i) for i in range(len(x.shape))]
        return reshape(roll(flatten(x), shifts_l[0], 0), shape)
    axes = [axis] if not isinstance(axis, (list, tuple)) else list(axis)
    if len(axes) != len(shifts_l):
        raise ValueError(f"roll: {len(shifts_l)} shifts for {len(axes)} axes")
    for s, a in zip(shifts_l, axes):
        a = _axis(x, a, "roll")
        if not x.shape:
            continue
        if type(s) is not int:
            x = _roll_by_run_time_shift(x, s, a)
            continue
        n = x.shape[a]
        if n is None:
            k = _dim(x, a)
            k = k - (s % k)
            x = concat([_take(x, a, k, None), _take(x, a, 0, k)], axis=a)
            continue
        if n == 0 or s % n == 0:
            continue
        k = n - s % n
        x = concat([_take(x, a, k, None), _take(x, a, 0, k)], axis=a)
    return x


def _run_time_shift(s):
    if len(s.shape) != 0 or np.dtype(s.dtype).kind not in "iu":
        raise TypeError(f"roll: a shift must be an int or a 0-d integer tensor, got a "
                        f"{np.dtype(s.dtype).name} tensor of shape {list(s.shape)}")
    return s


def _roll_by_run_time_shift(x, s, axis):
    """roll along `axis` by a shift computed in the program (Autoformer's
    time-delay aggregation rolls by `int(top_k_index[i])`): element j comes
    from position (j - s) mod n, gathered, so the axis keeps its size."""
    from .manipulation import gather
    n = _dim(x, axis)
    idx = (arange(n) - s) % n
    return gather(x, idx, axis=axis)


# ---- tril / triu ------------------------------------------------------------------------------
def _triangle(x, diagonal, lower, opname):
    x = lift(x)
    if len(x.shape) < 2:
        raise ValueError(f"{opname}: x must have at least 2 dims, got {tuple(x.shape)}")
    diagonal = _int(diagonal, opname, "diagonal")
    m, n = x.shape[-2], x.shape[-1]
    if m is not None and n is not None:  # known dims: the mask is a numpy constant
        offset = np.arange(n)[None, :] - np.arange(m)[:, None]
        keep = offset <= diagonal if lower else offset >= diagonal
        return where(keep, x, zeros_like_(x))
    rows = unsqueeze(arange(_dim(x, -2)), 1)
    cols = unsqueeze(arange(_dim(x, -1)), 0)
    offset = cols - rows  # (M, N): j - i
    keep = less_equal(offset, diagonal) if lower else greater_equal(offset, diagonal)
    return where(keep, x, zeros_like_(x))


def tril(x, diagonal=0, name=None):
    """`x` with the entries above the `diagonal`-th diagonal of its last two dims zeroed."""
    return _triangle(x, diagonal, True, "tril")


def triu(x, diagonal=0, name=None):
    """`x` with the entries below the `diagonal`-th diagonal of its last two dims zeroed."""
    return _triangle(x, diagonal, False, "triu")


# ---- meshgrid / slice ----------------------------------------------------------------------------
def meshgrid(*args, **kwargs):
    """Coordinate grids of 1-D tensors, "ij" indexing (Paddle's): the i-th
    result varies along dim i; all have shape (len(x0), len(x1), ...)."""
    xs = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    xs = [lift(x) for x in xs]
    for x in xs:
        if len(x.shape) != 1:
            raise ValueError(f"meshgrid: every input must be 1-D, got shape {tuple(x.shape)}")
    n = len(xs)
    dims = [_dim(x, 0) for x in xs]
    out = []
    for i, x in enumerate(xs):
        shape = [1] * n
        shape[i] = -1
        out.append(expand(reshape(x, shape), dims))
    return out


def slice(input, axes, starts, ends):
    """Paddle's `slice`: `input[starts[k]:ends[k]]` along each `axes[k]`
    (bounds may be ints or scalar tensors; out-of-range bounds clamp)."""
    return strided_slice(input, axes, starts, ends, [1] * len(axes))


def strided_slice(x, axes, starts, ends, strides, name=None):
    """`x[starts[k]:ends[k]:strides[k]]` along each `axes[k]`."""
    x = lift(x)
    axes, starts, ends, strides = (list(v) for v in (axes, starts, ends, strides))
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise ValueError("strided_slice: axes, starts, ends and strides must have one entry "
                         "each per axis")
    index = [builtins.slice(None)] * len(x.shape)
    for a, s, e, st in zip(axes, starts, ends, strides):
        a = _axis(x, a, "strided_slice")
        index[a] = builtins.slice(_bound(s), _bound(e), _int(st, "strided_slice", "a stride"))
    return getitem(x, tuple(index))


def _bound(b):
    if is_value(b):
        return b
    return int(b)
