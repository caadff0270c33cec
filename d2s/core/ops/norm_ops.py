"""Batch normalization's statistics step as one op: `batch_normalize(x, axes,
epsilon)` gives `(x - mean) / sqrt(var + epsilon)` with the batch's mean and
biased variance over `axes` (both kept as outputs, reduced dims kept, for the
running statistics). Written with the elementwise ops and reductions, its
gradient differentiates every broadcast and division on the way (about
twenty passes over the activations per layer); as one op the input's
cotangent is the closed form `(g - mean(g) - xhat * mean(g * xhat)) / s`,
built from ordinary ops, so it fuses on numpy, differentiates again and
lowers wherever they do. The scale and shift stay outside
(`d2s.nn.functional.batch_norm`)."""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import numel, reduced_shape
from ._base import lift
from .elementwise import cast, sqrt
from .reduction import mean


def _count(x, axes):
    """The number of elements each statistic averages (a tensor when unknown)."""
    n = numel(tuple(x.shape[a] for a in axes))
    return n if n is not None else cast(bind("numel", x, axes=tuple(axes)), x.dtype)


def _batch_normalize_kernel(x, axes, epsilon):
    if x.ndim >= 3 and x.size and tuple(axes) == (0,) + tuple(range(2, x.ndim)) \
            and x.dtype in _BLAS_FLOATS:
        return _per_channel(x, epsilon)
    count = 1
    for a in axes:
        count *= x.shape[a]
    mu = np.true_divide(np.add.reduce(x, axis=axes, keepdims=True), count).astype(x.dtype)
    centered = np.subtract(x, mu)
    var = np.true_divide(np.add.reduce(np.square(centered), axis=axes, keepdims=True),
                         count).astype(x.dtype)
    xhat = np.true_divide(centered, np.sqrt(var + x.dtype.type(epsilon)), out=centered)
    return xhat, mu, var


_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _per_channel(x, epsilon):
    """Statistics per channel of an N C ... input (every axis but 1: batch
    norm's). Each (sample, channel) row is contiguous: the sums run along
    rows, and the squared deviations are dot products of the centered rows
    with themselves (a batched matrix product), so the squares are never
    stored as an input-sized array."""
    n, c = x.shape[:2]
    count = x.size // c
    rows = x.reshape(n, c, -1)
    mu = np.true_divide(np.add.reduce(np.add.reduce(rows, axis=2), axis=0),
                        count).astype(x.dtype)
    centered = np.subtract(rows, mu[:, None])
    squares = np.matmul(centered[:, :, None, :], centered[:, :, :, None]).reshape(n, c)
    var = np.true_divide(np.add.reduce(squares, axis=0), count).astype(x.dtype)
    np.true_divide(centered, np.sqrt(var + x.dtype.type(epsilon))[:, None], out=centered)
    stats = (1, c) + (1,) * (x.ndim - 2)
    return centered.reshape(x.shape), mu.reshape(stats), var.reshape(stats)


def _batch_normalize_infer(x, axes, epsilon):
    if np.dtype(x.dtype).kind != "f":
        raise TypeError(f"batch_norm: expects a floating-point input, got {x.dtype}")
    stats = Aval(reduced_shape(tuple(x.shape), axes, True), x.dtype)
    return Aval(tuple(x.shape), x.dtype), stats, stats


def _batch_normalize_vjp(g, out, x, axes, epsilon):
    g_hat, g_mean, g_var = g
    xhat, _, var = out
    s = sqrt(var + epsilon)
    dx = None
    if g_hat is not None:
        dx = (g_hat - mean(g_hat, axis=list(axes), keepdim=True)
              - xhat * mean(g_hat * xhat, axis=list(axes), keepdim=True)) / s
    n = _count(x, axes)
    if g_var is not None:  # d var / dx = 2 (x - mean) / n = 2 s xhat / n
        extra = xhat * (g_var * s * (2.0 / n))
        dx = extra if dx is None else dx + extra
    if g_mean is not None:  # d mean / dx = 1 / n
        extra = bind("broadcast_like", g_mean / n, x)
        dx = extra if dx is None else dx + extra
    return (dx,)


register_op("batch_normalize", _batch_normalize_kernel, _batch_normalize_infer,
            _batch_normalize_vjp, num_outputs=3, fresh=True)


def batch_normalize(x, axes, epsilon):
    """(normalized x, batch mean, batch variance) over `axes` (see the module doc)."""
    return bind("batch_normalize", lift(x), axes=tuple(int(a) for a in axes),
                epsilon=float(epsilon))
