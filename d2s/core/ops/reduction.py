"""Reductions: sum, mean, max, min, argmax; and the broadcast helpers their
gradients (and every broadcasting op's gradient) use."""
from __future__ import annotations

import functools

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import broadcast_shapes, normalize_axes, numel, reduced_shape
from ._base import lift, probe_dtype
from .elementwise import cast, equal


# ---- broadcast helpers -------------------------------------------------------
def _summed_axes(g_shape, shape):
    """Axes of a broadcast result `g_shape` that summing back to `shape` reduces."""
    lead = len(g_shape) - len(shape)
    return tuple(range(lead)) + tuple(
        i + lead for i, d in enumerate(shape) if d == 1 and g_shape[i + lead] != 1)


@functools.lru_cache(maxsize=1024)
def _summing(g_shape, shape):
    """(`_summed_axes`, whether they are exactly the leading axes): computed once
    per pair of shapes, as every bias gradient of every step asks again. Summing
    away only leading axes gives `shape` without keepdims and a reshape (unless
    `shape` is (): that sum would be a numpy scalar, not a 0-d array)."""
    axes = _summed_axes(g_shape, shape)
    return axes, bool(shape) and axes == tuple(range(len(g_shape) - len(shape)))


def _sum_to_like_kernel(g, x):
    shape = x.shape
    if g.shape == shape:
        return g
    axes, leading = _summing(g.shape, shape)
    if leading:  # (the same sums: keepdims only shapes the result)
        return np.add.reduce(g, axis=axes)
    return np.add.reduce(g, axis=axes, keepdims=True).reshape(shape)


def _broadcast_like_kernel(g, x):
    return np.broadcast_to(g, np.broadcast_shapes(g.shape, x.shape))


# Sum `g` down to the shape of `x` (the gradient of broadcasting).
register_op("sum_to_like", _sum_to_like_kernel,
            lambda g, x: Aval(tuple(x.shape), g.dtype),
            vjp=lambda gg, out, g, x: (bind("broadcast_like", gg, g), None))
# Broadcast `g` against the shape of `x`.
register_op("broadcast_like", _broadcast_like_kernel,
            lambda g, x: Aval(broadcast_shapes(g.shape, x.shape), g.dtype),
            vjp=lambda gg, out, g, x: (bind("sum_to_like", gg, g), None))


def _expand_reduced(g, x, axes, keepdim):
    """Cotangent of a reduction, broadcast back to x's shape."""
    if not keepdim and axes:
        g = bind("unsqueeze", g, axes=tuple(axes))
    return bind("broadcast_like", g, x)


# ---- sum / mean ---------------------------------------------------------------
def _reduce_infer(kernel):
    def infer(x, axes, keepdim):
        return Aval(reduced_shape(tuple(x.shape), axes, keepdim),
                    probe_dtype(kernel, np.dtype(x.dtype)))
    return infer


# Float reductions call the ufunc's reduce directly: the same arithmetic as
# np.sum / np.mean (which wrap it), without their per-call overhead.
def _sum_kernel(x, axes, keepdim):
    if x.dtype.kind == "f":
        if not keepdim and len(axes) == x.ndim:
            return x.sum()  # the cheapest call for a full reduction
        return np.add.reduce(x, axis=axes, keepdims=keepdim)
    return np.sum(x, axis=axes, keepdims=keepdim)


def _mean_kernel(x, axes, keepdim):
    if x.dtype.kind == "f" and x.dtype.itemsize >= 4:
        count = 1
        for a in axes:
            count *= x.shape[a]
        return np.true_divide(np.add.reduce(x, axis=axes, keepdims=keepdim), count)
    return np.mean(x, axis=axes, keepdims=keepdim)


def _count(x, axes):
    n = numel(tuple(x.shape[a] for a in axes))
    return n if n is not None else bind("numel", x, axes=tuple(axes))


def _mean_vjp(g, out, x, axes, keepdim):
    n = _count(x, axes)
    if not isinstance(n, int):
        n = cast(n, g.dtype)
    return (_expand_reduced(g, x, axes, keepdim) / n,)


def _np_sum(x):
    return np.sum(x)


def _np_mean(x):
    return np.mean(x)


register_op("sum", _sum_kernel, _reduce_infer(_np_sum),
            vjp=lambda g, out, x, axes, keepdim: (
                cast(_expand_reduced(g, x, axes, keepdim), x.dtype),))
register_op("mean", _mean_kernel, _reduce_infer(_np_mean), vjp=_mean_vjp, fresh=True)


# axis=None (reduce everything), the common case, needs no normalizing.
_ALL_AXES = tuple(tuple(range(n)) for n in range(33))


def _axes(x, axis, opname="reduction"):
    ndim = len(x.shape)
    if axis is None and ndim < len(_ALL_AXES):
        return _ALL_AXES[ndim]
    if ndim == 0:
        # A 0-d tensor has no axis to reduce; like paddle, axis 0 / -1 name the value itself.
        for a in [axis] if isinstance(axis, int) else list(axis):
            if a not in (0, -1):
                raise ValueError(f"{opname}: axis {a} is out of range for a 0-d tensor")
        return ()
    return normalize_axes(axis, ndim, opname)


def _is_dtype_arg(v):
    """A dtype where Paddle's signature has one (`sum(x, axis, dtype, keepdim)`)."""
    return isinstance(v, (str, np.dtype, type)) and not isinstance(v, bool)


def sum(x, axis=None, keepdim=False, dtype=None, name=None):
    """Sum over `axis` (all by default); `dtype` (Paddle's) casts the input
    first. A dtype given third, as Paddle's signature has it, is one."""
    if _is_dtype_arg(keepdim):
        keepdim, dtype = (dtype if isinstance(dtype, bool) else False), keepdim
    x = lift(x)
    if dtype is None:
        return bind("sum", x, axes=_axes(x, axis), keepdim=bool(keepdim))
    # (the sum of small ints is int64, as numpy's: the result is cast too)
    return cast(bind("sum", cast(x, dtype), axes=_axes(x, axis), keepdim=bool(keepdim)), dtype)


def mean(x, axis=None, keepdim=False):
    x = lift(x)
    return bind("mean", x, axes=_axes(x, axis), keepdim=bool(keepdim))


# ---- max / min --------------------------------------------------------------------
def _extremum_vjp(g, out, x, axes, keepdim):
    # Ties share the gradient equally, as in PaddlePaddle and JAX.
    out_b = _expand_reduced(out, x, axes, keepdim)
    mask = cast(equal(x, out_b), g.dtype)
    count = bind("sum", mask, axes=tuple(axes), keepdim=True)
    g_b = _expand_reduced(g, x, axes, keepdim)
    return (g_b * mask / bind("broadcast_like", count, x),)


def _max_kernel(x, axes, keepdim):
    if not keepdim and len(axes) == x.ndim and x.size:
        return x.max()
    return np.maximum.reduce(x, axis=axes, keepdims=keepdim)


def _min_kernel(x, axes, keepdim):
    if not keepdim and len(axes) == x.ndim and x.size:
        return x.min()
    return np.minimum.reduce(x, axis=axes, keepdims=keepdim)


register_op("max", _max_kernel, _reduce_infer(lambda x: np.max(x)), vjp=_extremum_vjp)
register_op("min", _min_kernel, _reduce_infer(lambda x: np.min(x)), vjp=_extremum_vjp)


def max(x, axis=None, keepdim=False):
    x = lift(x)
    return bind("max", x, axes=_axes(x, axis), keepdim=bool(keepdim))


def min(x, axis=None, keepdim=False):
    x = lift(x)
    return bind("min", x, axes=_axes(x, axis), keepdim=bool(keepdim))


# ---- argmax -------------------------------------------------------------------------
def _argmax_kernel(x, axis, keepdim):
    if axis is None:
        r = np.argmax(x)
        return np.asarray(r, dtype=np.int64).reshape((1,) * x.ndim if keepdim else ())
    return np.argmax(x, axis=axis, keepdims=keepdim).astype(np.int64, copy=False)


def _argmax_infer(x, axis, keepdim):
    shape = tuple(x.shape)
    axes = tuple(range(len(shape))) if axis is None else (axis,)
    return Aval(reduced_shape(shape, axes, keepdim), np.dtype("int64"))


register_op("argmax", _argmax_kernel, _argmax_infer)


def argmax(x, axis=None, keepdim=False, dtype="int64", name=None):
    """Index of the first largest value over `axis` (of the flattened input
    by default), as `dtype` (Paddle's: int64 or int32)."""
    x = lift(x)
    if axis is not None:
        axes = _axes(x, axis, "argmax")
        axis = axes[0] if axes else None
    out = bind("argmax", x, axis=axis, keepdim=bool(keepdim))
    return out if dtype is None or np.dtype(dtype) == np.int64 else cast(out, dtype)


def argmin(x, axis=None, keepdim=False, dtype="int64", name=None):
    """Index of the first smallest value: the first largest of `-x` (unsigned
    and bool inputs negated as int64, floats as they are: NaN stays first)."""
    x = lift(x)
    if np.dtype(x.dtype).kind in "ub":
        x = cast(x, "int64")
    return argmax(-x, axis, keepdim, dtype)


# ---- norm (composite) -------------------------------------------------------------------
def norm(x, p=2, axis=None, keepdim=False):
    """Vector p-norm over `axis` (all elements by default); p in {1, 2, 'fro', inf}.

    The 2-norm's gradient at a zero vector is 0 (PaddlePaddle's and PyTorch's
    subgradient), not `0 * inf = nan`: sqrt reads 1 where the sum of squares
    is 0 and the result there is selected from a constant, so no inf enters
    the backward pass (a PointNet's `||I - A A^T||` is exactly 0 at init)."""
    from .creation import ones_like, zeros_like
    from .elementwise import abs as _abs, sqrt, where
    x = lift(x)
    if p in (2, "fro", 2.0):
        squares = sum(x * x, axis, keepdim)
        nonzero = squares > 0
        safe = where(nonzero, squares, ones_like(squares))
        return where(nonzero, sqrt(safe), zeros_like(squares))
    if p in (1, 1.0):
        return sum(_abs(x), axis, keepdim)
    if p in (np.inf, "inf", float("inf")):
        return max(_abs(x), axis, keepdim)
    raise ValueError(f"norm: unsupported p={p!r} (use 1, 2, 'fro' or inf)")
