"""Cumulative ops along one axis: cumsum, cumprod.

Both primitives carry a `reverse` attribute (accumulate from the end): the
gradient of a cumulative sum is the reversed cumulative sum of the cotangent,
so each op's vjp is the op itself. Result dtypes follow NumPy 2 (a cumsum of
int32 or bool is int64). Rules for xla and ONNX: `backends/xla/rules/scan.py`,
`onnx/rules/scan.py`.
"""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..dtypes import as_dtype
from ..registry import Aval, register_op
from ..shapes import normalize_axis
from ._base import cast_like, lift, probe_dtype
# (module-level, not in the functions: an import statement costs an eager call
# about a microsecond each time it runs)
from .elementwise import cast
from .manipulation import flatten, reshape

__all__ = ["cumsum", "cumprod"]


def _scan_kernel(fn, ufunc):
    # A float scan calls the ufunc's accumulate, which `fn` (np.cumsum,
    # np.cumprod) wraps: the same arithmetic without the wrapper's per-call
    # cost. Other dtypes take `fn`, whose result dtype NumPy 2 widens (an int32
    # cumsum is int64), which accumulate alone would not.
    accumulate = ufunc.accumulate

    def kernel(x, axis, reverse):
        if reverse:
            return np.flip(fn(np.flip(x, axis), axis=axis), axis)
        if x.dtype.kind == "f":
            return accumulate(x, axis=axis)
        return fn(x, axis=axis)
    return kernel


def _np_cumsum(x):
    return np.cumsum(x, axis=0)


def _np_cumprod(x):
    return np.cumprod(x, axis=0)


def _scan_infer(probe):
    def infer(x, axis, reverse):
        return Aval(tuple(x.shape), probe_dtype(probe, np.dtype(x.dtype)))
    return infer


def _cumsum_vjp(g, out, x, axis, reverse):
    return (cast_like(bind("cumsum", g, axis=axis, reverse=not reverse), x),)


def _cumprod_vjp(g, out, x, axis, reverse):
    """d out_j / d x_i = out_j / x_i for j at or after i: the reversed
    cumulative sum of g * out, divided by x. An entry of x that is exactly 0
    gets a NaN gradient (0 / 0) rather than a wrong number; the others are
    exact (a zero elsewhere makes their products, and gradients, zero)."""
    acc = bind("cumsum", g * out, axis=axis, reverse=not reverse)
    return (cast_like(acc / x, x),)


register_op("cumsum", _scan_kernel(np.cumsum, np.add), _scan_infer(_np_cumsum), _cumsum_vjp)
register_op("cumprod", _scan_kernel(np.cumprod, np.multiply), _scan_infer(_np_cumprod), _cumprod_vjp)


def _prepared(x, axis, dtype, opname):
    x = lift(x)
    if dtype is not None:
        x = cast(x, as_dtype(dtype))
    if axis is None:
        return flatten(x), 0
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{opname}: axis must be an int or None, got {axis!r}")
    return x, normalize_axis(int(axis), max(len(x.shape), 1), opname)


def cumsum(x, axis=None, dtype=None, name=None):
    """Cumulative sum along `axis` (over the flattened x when None)."""
    x, axis = _prepared(x, axis, dtype, "cumsum")
    if not x.shape:
        return reshape(bind("cumsum", reshape(x, [1]), axis=0, reverse=False), [])
    return bind("cumsum", x, axis=axis, reverse=False)


def cumprod(x, dim=None, dtype=None, name=None):
    """Cumulative product along `dim` (over the flattened x when None)."""
    x, axis = _prepared(x, dim, dtype, "cumprod")
    if not x.shape:
        return reshape(bind("cumprod", reshape(x, [1]), axis=0, reverse=False), [])
    return bind("cumprod", x, axis=axis, reverse=False)
