"""More reductions: any, all, logsumexp (compositions of sum / max) and prod
(a primitive: its xla and ONNX rules are in the targets' `rules/reduce_more.py`)."""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import register_op
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


def logsumexp(x, axis=None, keepdim=False, name=None):
    """log(sum(exp(x))) over `axis`, computed stably (the max is subtracted
    first: its gradient cancels, leaving softmax(x) as the derivative)."""
    from .elementwise import exp, log, where
    from .manipulation import detach
    from .reduction import max as _max, sum as _sum
    x = lift(x)
    if np.dtype(x.dtype).kind not in "fc":
        from .elementwise import cast
        x = cast(x, "float32")
    m = detach(_max(x, axis, keepdim=True))
    # an all -inf slice (or +inf) would give nan from inf - inf: shift by 0 there
    from .math import isfinite
    finite = isfinite(m)
    m = where(finite, m, bind("full_like", m, fill_value=0, dtype=None))
    out = log(_sum(exp(x - m), axis, keepdim=True)) + m
    if keepdim:
        return out
    axes = _axes(x, axis, "logsumexp")
    return bind("squeeze", out, axes=axes) if axes else out


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

