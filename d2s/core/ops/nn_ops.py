"""Neural-network primitives whose fused kernels matter for stability or speed:
softmax, log_softmax, cross_entropy, gelu. (linear, layer_norm, mse_loss and
embedding are compositions and live in `d2s.nn.functional`.)"""
from __future__ import annotations

import math

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import normalize_axis
from ._base import lift, same_infer
from .elementwise import cast, erf, exp, tanh
from .reduction import sum as _sum


def _softmax_kernel(x, axis):
    z = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax_kernel(x, axis):
    z = x - np.max(x, axis=axis, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


def _softmax_vjp(g, out, x, axis):
    gy = g * out
    return (gy - out * _sum(gy, axis, keepdim=True),)


def _log_softmax_vjp(g, out, x, axis):
    return (g - exp(out) * _sum(g, axis, keepdim=True),)


register_op("softmax", _softmax_kernel, same_infer, _softmax_vjp)
register_op("log_softmax", _log_softmax_kernel, same_infer, _log_softmax_vjp)


def softmax(x, axis=-1):
    x = lift(x)
    return bind("softmax", x, axis=normalize_axis(axis, len(x.shape), "softmax"))


def log_softmax(x, axis=-1):
    x = lift(x)
    return bind("log_softmax", x, axis=normalize_axis(axis, len(x.shape), "log_softmax"))


# ---- cross entropy --------------------------------------------------------------
def _check_labels(label, n_classes):
    if label.size and (label.min() < 0 or label.max() >= n_classes):
        raise ValueError(f"cross_entropy: labels must lie in [0, {n_classes}), got "
                         f"[{label.min()}, {label.max()}]")


def _cross_entropy_kernel(logits, label):
    _check_labels(label, logits.shape[-1])
    logp = _log_softmax_kernel(logits, -1)
    picked = np.take_along_axis(logp, label[:, None], axis=-1)[:, 0]
    return -np.mean(picked).astype(logits.dtype)


def _cross_entropy_grad_kernel(g, logits, label):
    p = _softmax_kernel(logits, -1)
    p[np.arange(label.shape[0]), label] -= 1
    return (p * (g / label.shape[0])).astype(logits.dtype, copy=False)


def _cross_entropy_infer(logits, label):
    if len(logits.shape) != 2 or len(label.shape) != 1:
        raise ValueError(f"cross_entropy: expects logits (N, C) and int64 labels (N,), "
                         f"got {tuple(logits.shape)} and {tuple(label.shape)}")
    if not np.issubdtype(np.dtype(label.dtype), np.integer):
        raise TypeError(f"cross_entropy: labels must be integer class indices, got {label.dtype}")
    return Aval((), logits.dtype)


register_op("cross_entropy", _cross_entropy_kernel, _cross_entropy_infer,
            vjp=lambda g, out, logits, label: (
                bind("cross_entropy_grad", g, logits, label), None),
            doc="Mean softmax cross-entropy of (N, C) logits and (N,) int labels.")


def _cross_entropy_grad_vjp(gg, out, g, logits, label):
    # out = (softmax(logits) - onehot(label)) * g / N: linear in g; in logits the
    # softmax vjp of gg, scaled by g / N.
    unit = bind("cross_entropy_grad", bind("full_like", g, fill_value=1, dtype=None),
                logits, label)
    dg = _sum(gg * unit)
    p = bind("softmax", logits, axis=len(logits.shape) - 1)
    gp = gg * p
    n = cast(bind("numel", label, axes=None), g.dtype)
    dlogits = (gp - p * _sum(gp, -1, keepdim=True)) * (g / n)
    return cast(dg, g.dtype), cast(dlogits, logits.dtype), None


register_op("cross_entropy_grad", _cross_entropy_grad_kernel,
            lambda g, logits, label: Aval(tuple(logits.shape), logits.dtype),
            vjp=_cross_entropy_grad_vjp)


def cross_entropy(logits, label):
    return bind("cross_entropy", lift(logits), lift(label))


# ---- gelu (composite over erf / tanh) ----------------------------------------------------
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x, approximate=False):
    """GELU: exact `x * Phi(x)` via erf, or the tanh approximation."""
    x = lift(x)
    if approximate:
        return 0.5 * x * (1.0 + tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))
