"""bincount, nonzero, add_n: compositions of existing ops. bincount's and
nonzero's result lengths depend on the data (numpy runs them; a compiling
backend runs such a program on numpy, after its warning). var: a primitive
(one kernel in place of five ops per call; its xla and ONNX rules are in the
targets' `rules/counting.py`)."""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import reduced_shape
from ._base import is_value, lift
from .elementwise import cast
from .reduction import _axes, _count, _expand_reduced

__all__ = ["bincount", "nonzero", "add_n", "var", "std"]


def bincount(x, weights=None, minlength=0, name=None):
    """Counts of each value 0..max(x) in the 1-D non-negative int tensor `x`
    (at least `minlength` of them); with `weights`, the sums of the weights
    instead (in the weights' dtype)."""
    from .creation import arange, full
    from .elementwise import cast, equal, maximum, where, zeros_like_
    from .manipulation import unsqueeze
    from .reduction import max as _max, sum as _sum
    x = lift(x)
    if np.dtype(x.dtype).kind not in "iu":
        raise TypeError(f"bincount: x must be an integer tensor, got {x.dtype}")
    if len(x.shape) != 1:
        raise ValueError(f"bincount: x must be 1-D, got shape {tuple(x.shape)}")
    minlength = int(minlength)
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be >= 0, got {minlength}")
    from ..tensor import Tensor
    if isinstance(x, Tensor) and x.size and x.numpy().min() < 0:
        raise ValueError("bincount: x must hold non-negative values")
    if weights is not None:
        weights = lift(weights)
        if tuple(weights.shape) != tuple(x.shape) and None not in tuple(weights.shape) + tuple(
                x.shape):
            raise ValueError(f"bincount: weights {tuple(weights.shape)} must be shaped like x "
                             f"{tuple(x.shape)}")
    if x.shape[0] == 0:
        dtype = "int64" if weights is None else weights.dtype
        return full([minlength], 0, dtype)
    n = maximum(_max(x) + 1, minlength)
    hits = equal(unsqueeze(x, -1), unsqueeze(arange(n), 0))  # (len(x), n)
    if weights is None:
        return _sum(cast(hits, "int64"), axis=0)
    w = unsqueeze(weights, -1)
    return _sum(where(hits, w, zeros_like_(w)), axis=0)


def nonzero(x, as_tuple=False):
    """Coordinates of the nonzero (true) elements of `x`: an int64 tensor of
    shape (count, ndim), or with `as_tuple` one (count,) tensor per dim."""
    from ..dispatch import bind
    from .creation import arange
    from .elementwise import not_equal
    from .indexing import getitem
    from .manipulation import reshape, stack
    from .search import _dim
    x = lift(x)
    mask = not_equal(x, 0) if np.dtype(x.dtype) != np.bool_ else x
    ndim = len(x.shape)
    if ndim == 0:
        mask = reshape(mask, [1])
        ndim = 1
    dims = [_dim(mask, i) for i in range(ndim)]
    coords = []
    for i in range(ndim):
        shape = [1] * ndim
        shape[i] = -1
        grid = reshape(arange(dims[i]), shape)
        if ndim > 1:
            grid = bind("broadcast_like", grid, mask)
        coords.append(getitem(grid, mask))
    if as_tuple:
        return tuple(coords)
    return stack(coords, axis=1)


def add_n(inputs, name=None):
    """The elementwise sum of a list of tensors (or one tensor)."""
    if is_value(inputs):
        return inputs
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n: needs at least one tensor")
    out = lift(inputs[0])
    for t in inputs[1:]:
        out = out + t
    return out


def var(x, axis=None, unbiased=True, keepdim=False, name=None):
    """Variance over `axis` (all elements by default); `unbiased` divides by
    n - 1. Integer and bool inputs are read as float32."""
    x = lift(x)
    if np.dtype(x.dtype).kind not in "fc":
        x = cast(x, "float32")
    return bind("var", x, axes=_axes(x, axis, "var"), unbiased=bool(unbiased),
                keepdim=bool(keepdim))


def _var_kernel(x, axes, unbiased, keepdim):
    """sum((x - mean)^2) / (n - 1, or n): numpy's own two-pass arithmetic."""
    n = 1
    for a in axes:
        n *= x.shape[a]
    axis = axes[0] if len(axes) == 1 else axes  # (an int axis: the cheaper call)
    d = x - np.true_divide(np.add.reduce(x, axis=axis, keepdims=True), n)
    np.multiply(d, d, out=d)
    return np.true_divide(np.add.reduce(d, axis=axis, keepdims=keepdim), n - 1 if unbiased else n)


def _var_infer(x, axes, unbiased, keepdim):
    return Aval(reduced_shape(tuple(x.shape), axes, keepdim), np.dtype(x.dtype))


def _var_vjp(g, out, x, axes, unbiased, keepdim):
    """d var / d x = 2 (x - mean) / (n - 1, or n)."""
    n = _count(x, axes)
    if unbiased:
        n = n - 1
    if not isinstance(n, int):
        n = cast(n, x.dtype)
    d = x - bind("mean", x, axes=axes, keepdim=True)
    return (_expand_reduced(g, x, axes, keepdim) * (d * 2.0) / n,)


register_op("var", _var_kernel, _var_infer, vjp=_var_vjp, fresh=True)


def std(x, axis=None, unbiased=True, keepdim=False, name=None):
    """Paddle's `std`: the square root of `var` (the same arguments)."""
    from .elementwise import sqrt
    return sqrt(var(x, axis, unbiased, keepdim))
