"""Random ops; their kernels draw from `d2s.core.random` at run time.

On the xla backend each draw is made on the host, by the same numpy code, in
program order, before the call (`ns.host_draw`), and fed to the executable:
the numbers equal the numpy backend's. A draw inside a tensor `if` or loop
(how many values a run draws depends on the data) is not lowered."""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..dtypes import as_dtype
from ..random import generator
from ..registry import Aval, register_op
from .shape_args import fill_spec, split_shape


# `shape` holds None where a dim is given at run time by the next input (shape_args).
def _uniform_kernel(*dims, shape, dtype, low=0.0, high=1.0):
    return generator().uniform(low, high, size=fill_spec(shape, dims)).astype(dtype)


def _normal_kernel(*dims, shape, dtype, mean=0.0, std=1.0):
    return generator().normal(mean, std, size=fill_spec(shape, dims)).astype(dtype)


def _shape_infer(*dims, shape, dtype, **_):
    return Aval(tuple(shape), np.dtype(dtype))


# ONNX's RandomUniform/RandomNormal draw another stream than numpy's generator.
register_op("uniform", _uniform_kernel, _shape_infer, draws=True)
register_op("gaussian", _normal_kernel, _shape_infer, draws=True)


def rand(shape, dtype="float32"):
    """Uniform samples in [0, 1)."""
    spec, dims = split_shape(shape, "rand")
    return bind("uniform", *dims, shape=spec, dtype=as_dtype(dtype).name)


def randn(shape, dtype="float32"):
    """Standard normal samples."""
    spec, dims = split_shape(shape, "randn")
    return bind("gaussian", *dims, shape=spec, dtype=as_dtype(dtype).name)


def uniform(shape, dtype="float32", min=-1.0, max=1.0):
    spec, dims = split_shape(shape, "uniform")
    return bind("uniform", *dims, shape=spec, dtype=as_dtype(dtype).name,
                low=float(min), high=float(max))


def normal(shape=None, mean=0.0, std=1.0, dtype="float32", name=None):
    """Normal samples of `shape`. Paddle's order, `normal(mean, std, shape)`,
    is read as such when the first argument is a number."""
    if shape is None or isinstance(shape, (int, float)) and not isinstance(shape, bool):
        if shape is not None:  # normal(mean, std, shape): Paddle's positional order
            shape, mean, std = std, shape, mean
        if shape is None or isinstance(shape, (int, float)):
            raise TypeError("normal: give the shape (a list), e.g. normal(shape=[2, 3], "
                            "mean=0.0, std=1.0)")
    spec, dims = split_shape(shape, "normal")
    return bind("gaussian", *dims, shape=spec, dtype=as_dtype(dtype).name,
                mean=float(mean), std=float(std))


def _dropout_mask(shape, p, dtype):
    """The scaled keep mask: 1 / (1 - p) where kept, 0 where dropped."""
    keep = generator().random(shape) >= p
    return (keep / (1.0 - p)).astype(dtype) if p < 1.0 else np.zeros(shape, dtype)


def _dropout_kernel(x, p):
    mask = _dropout_mask(x.shape, p, x.dtype)
    return x * mask, mask


def _dropout_infer(x, p):
    a = Aval(tuple(x.shape), x.dtype)
    return a, a


# Inverted dropout; the second output is the scaled keep mask.
register_op("dropout", _dropout_kernel, _dropout_infer,
            vjp=lambda g, out, x, p: (None if g[0] is None else g[0] * out[1],),
            num_outputs=2, draws=True)
