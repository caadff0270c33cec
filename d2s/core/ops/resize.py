"""`resize_weights`: the (n_out, n_in) interpolation matrix of one axis of a
resize (`nn.functional.interpolate`), for an axis whose size is known only
at run time (an FPN's top-down `interpolate(size=lateral.shape[-2:])` on
images of any size). With sizes known while building, `interpolate` embeds
the same matrix as a constant; this op builds it from the run's sizes, so
both give the same values."""
from __future__ import annotations

import math

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ._base import lift

__all__ = ["resize_matrix", "resize_weights"]


def resize_matrix(n_in, n_out, mode, align_corners, align_mode, ratio, dtype):
    """(n_out, n_in) weights of one axis: 'nearest' picks a source row,
    'linear' blends two (Paddle's `align_corners` / `align_mode` sampling),
    'cubic' four."""
    m = np.zeros((n_out, n_in), dtype)
    i = np.arange(n_out)
    if mode == "nearest":
        if align_corners:
            r = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
            src = np.floor(i * r + 0.5).astype(np.int64)
        else:
            src = np.floor(i * ratio).astype(np.int64)
        m[i, np.minimum(src, n_in - 1)] = 1.0
        return m
    if mode == "cubic":
        return _cubic_matrix(m, i, n_in, n_out, align_corners, ratio)
    if align_corners:
        src = i * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    elif align_mode == 0:
        src = np.maximum((i + 0.5) * ratio - 0.5, 0.0)
    else:
        src = i * ratio
    lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = src - lo
    np.add.at(m, (i, lo), 1.0 - frac)
    np.add.at(m, (i, hi), frac)
    return m


_CUBIC_A = -0.75  # the cubic convolution kernel's parameter PyTorch and PaddlePaddle use


def _cubic_matrix(m, i, n_in, n_out, align_corners, ratio):
    """Bicubic (Keys cubic convolution) weights of one axis: four source rows
    around each output position, indices past the ends clamped to them."""
    if align_corners:
        src = i * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = (i + 0.5) * ratio - 0.5  # (not clamped at 0, unlike linear)
    base = np.floor(src).astype(np.int64)
    frac = src - base
    a = _CUBIC_A
    near = lambda d: ((a + 2) * d - (a + 3)) * d * d + 1          # |d| <= 1
    far = lambda d: ((a * d - 5 * a) * d + 8 * a) * d - 4 * a     # 1 < |d| < 2
    weights = (far(frac + 1), near(frac), near(1 - frac), far(2 - frac))
    for offset, w in zip((-1, 0, 1, 2), weights):
        np.add.at(m, (i, np.clip(base + offset, 0, n_in - 1)), w)
    return m


def _kernel(n_in, *n_out, mode, align_corners, align_mode, scale, dtype):
    n_in = int(n_in)
    if scale is not None:  # the size the scale gives, the scale's sampling
        size, ratio = int(math.floor(n_in * scale)), 1.0 / scale
    else:
        size = int(n_out[0])
        ratio = n_in / size
    if size <= 0:
        raise ValueError(f"interpolate: the output size must be positive, got {size} "
                         f"(input size {n_in})")
    return resize_matrix(n_in, size, mode, align_corners, align_mode, ratio, np.dtype(dtype))


def _infer(n_in, *n_out, mode, align_corners, align_mode, scale, dtype):
    return Aval((None, None), np.dtype(dtype))


# integer sizes in, a constant of the run out: nothing to differentiate
register_op("resize_weights", _kernel, _infer)


def resize_weights(n_in, n_out=None, *, mode, align_corners=False, align_mode=0, scale=None,
                   dtype="float32"):
    """The matrix for sizes `n_in` -> `n_out` (ints or int scalar tensors), or
    for `n_in` scaled by `scale` when `n_out` is None."""
    sizes = [lift(n_in)] + ([] if n_out is None else [lift(n_out)])
    return bind("resize_weights", *sizes, mode=mode, align_corners=bool(align_corners),
                align_mode=int(align_mode), scale=None if scale is None else float(scale),
                dtype=str(np.dtype(dtype)))
