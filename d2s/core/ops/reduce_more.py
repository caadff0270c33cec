"""More reductions: any, all (compositions of sum), logsumexp and prod
(primitives: their xla and ONNX rules are in the targets' `rules/reduce_more.py`)."""
from __future__ import annotations

import functools

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import reduced_shape
from ._base import cast_like, lift
from .reduction import _axes, _expand_reduced, _reduce_infer

__all__ = ["any", "all", "logsumexp", "prod"]


def any(x, axis=None, keepdim=False, name=None):
    """True where some element (read as a truth value) over `axis` is; an
    empty reduction is False."""
    from .elementwise import cast, greater_than
    from .reduction import sum as _sum
    x = lift(x)
    return greater_than(_sum(cast(x, "bool"), axis, keepdim), 0)


def all(x, axis=None, keepdim=False, name=None):
    """True where every element over `axis` is (an empty reduction is True)."""
    from .elementwise import equal, logical_not
    from .reduction import sum as _sum
    x = lift(x)
    return equal(_sum(logical_not(x), axis, keepdim), 0)


# ---- logsumexp (a primitive: one kernel in place of a dozen ops per call) ---------
def _logsumexp_kernel(x, axes, keepdim):
    """log(sum(exp(x))) over `axes`, shifted by the max so that exp cannot
    overflow. A max of -inf or inf is clamped to the dtype's finite range
    (inf - inf would make nan of a -inf or inf result): the result is still
    -inf or inf. The lower clamp is the reduction's own `initial` (no call of
    its own); a reduction over an empty axis raises, as numpy's max does."""
    if not axes:
        return x.copy()
    axis = axes[0] if len(axes) == 1 else axes  # (an int axis: the cheaper call)
    if x.dtype.kind == "f" and x.size:
        lo, hi = _finite_range(x.dtype)
        m = np.maximum.reduce(x, axis=axis, keepdims=True, initial=lo)
        np.minimum(m, hi, out=m)
    else:
        m = np.maximum.reduce(x, axis=axis, keepdims=True)
    out = np.log(np.add.reduce(np.exp(x - m), axis=axis, keepdims=True))
    out += m  # (an all -inf slice: log(0) is -inf, with numpy's warning)
    return out if keepdim else out[_dropped(x.ndim, axes)]


@functools.lru_cache(maxsize=256)
def _dropped(ndim, axes):
    """The index that drops the kept size-1 `axes` (a view: no reshape call);
    the Ellipsis keeps a full reduction a 0-d array, not a numpy scalar."""
    return tuple(0 if i in axes else slice(None) for i in range(ndim)) + (Ellipsis,)


@functools.lru_cache(maxsize=None)
def _finite_range(dtype):
    """(lowest finite value, a 0-d array of the highest): a 0-d array operand
    costs a ufunc less than a numpy scalar, which it converts every call."""
    info = np.finfo(dtype)
    return info.min, np.array(info.max, dtype)


def _logsumexp_infer(x, axes, keepdim):
    return Aval(reduced_shape(tuple(x.shape), axes, keepdim), np.dtype(x.dtype))


def _logsumexp_vjp(g, out, x, axes, keepdim):
    """d logsumexp / d x = exp(x - logsumexp): softmax over `axes`."""
    from .elementwise import exp
    g_b = _expand_reduced(g, x, axes, keepdim)
    return (g_b * exp(x - _expand_reduced(out, x, axes, keepdim)),)


register_op("logsumexp", _logsumexp_kernel, _logsumexp_infer, vjp=_logsumexp_vjp, fresh=True)


def logsumexp(x, axis=None, keepdim=False, name=None):
    """log(sum(exp(x))) over `axis`, computed stably (the max is subtracted
    first); its derivative is softmax(x). Integer and bool inputs are read
    as float32."""
    x = lift(x)
    if np.dtype(x.dtype).kind not in "fc":
        from .elementwise import cast
        x = cast(x, "float32")
    return bind("logsumexp", x, axes=_axes(x, axis, "logsumexp"), keepdim=bool(keepdim))


def _np_prod(x):
    return np.prod(x)


def _prod_kernel(x, axes, keepdim):
    return np.prod(x, axis=axes, keepdims=keepdim)


def _prod_vjp(g, out, x, axes, keepdim):
    """d prod / d x_i = prod / x_i: an entry exactly 0 gets NaN (0 / 0), never
    a wrong number; the others are exact."""
    g_b = _expand_reduced(g * out, x, axes, keepdim)
    return (cast_like(g_b / x, x),)


register_op("prod", _prod_kernel, _reduce_infer(_np_prod), vjp=_prod_vjp)


def prod(x, axis=None, keepdim=False, dtype=None, name=None):
    """Product over `axis` (all elements by default), in NumPy 2's dtype
    (int32 and bool products are int64) or `dtype`."""
    from .elementwise import cast
    x = lift(x)
    if dtype is not None:
        x = cast(x, dtype)
    return bind("prod", x, axes=_axes(x, axis, "prod"), keepdim=bool(keepdim))

