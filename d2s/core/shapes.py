"""Shape arithmetic where `None` means "unknown until run time"."""
from __future__ import annotations


def broadcast_shapes(*shapes, opname="op"):
    """NumPy broadcasting over shapes whose dims may be None."""
    if len(shapes) == 2:
        # The usual pair (every binary op of a trace asks): equal shapes, or
        # one of them a scalar's, broadcast to the other unchanged.
        a, b = shapes
        if a == b or not b:
            return tuple(a)
        if not a:
            return tuple(b)
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(ndim):
        dims = []
        for s in shapes:
            i = axis - (ndim - len(s))
            dims.append(s[i] if i >= 0 else 1)
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(
                f"{opname}: shapes {', '.join(str(tuple(s)) for s in shapes)} "
                f"cannot be broadcast together")
        if known:
            result.append(known.pop())
        elif any(d is None for d in dims):
            result.append(None)
        else:
            result.append(1)
    return tuple(result)


def normalize_axis(axis, ndim, opname="op"):
    """Non-negative axis; on a 0-d tensor axes 0 and -1 both mean "the value"."""
    if ndim == 0 and axis in (0, -1):
        return 0
    if not -ndim <= axis < ndim:
        raise ValueError(f"{opname}: axis {axis} is out of range for rank {ndim}")
    return axis % ndim


def normalize_axes(axis, ndim, opname="op"):
    """None -> all axes; int or sequence -> sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(sorted(normalize_axis(a, ndim, opname) for a in axis))


def reduced_shape(shape, axes, keepdim):
    if keepdim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def numel(shape):
    """Product of dims, or None if any is unknown."""
    n = 1
    for d in shape:
        if d is None:
            return None
        n *= d
    return n


def merge_dims(a, b):
    """Most specific shape compatible with both (None where they disagree)."""
    return tuple(x if x == y else None for x, y in zip(a, b))
