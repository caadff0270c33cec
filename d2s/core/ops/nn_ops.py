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


# The stable forms share one step: z = x - max(x), e = exp(z), s = sum(e).
def _shifted_exp(x, axis):
    z = np.subtract(x, np.maximum.reduce(x, axis=axis, keepdims=True))
    e = np.exp(z)
    return z, e, np.add.reduce(e, axis=axis, keepdims=True)


def _softmax_kernel(x, axis):
    _, e, s = _shifted_exp(x, axis)
    e /= s
    return e


def _log_softmax_kernel(x, axis):
    z, _, s = _shifted_exp(x, axis)
    z -= np.log(s)
    return z


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
# A signed label seen as unsigned (a view, no copy): a negative one is then larger
# than any class count, so one reduction checks both bounds.
_UNSIGNED = {np.dtype(f"int{b}"): np.dtype(f"uint{b}") for b in (8, 16, 32, 64)}


def _check_labels(label, n_classes):
    if not label.size:
        return
    unsigned = _UNSIGNED.get(label.dtype)
    seen = label.view(unsigned) if unsigned is not None else label
    # (the ufuncs' reduce: `label.max()` reaches it through Python wrappers)
    if np.maximum.reduce(seen, axis=None) >= n_classes or (
            unsigned is None and label.dtype.kind == "i"
            and np.minimum.reduce(label, axis=None) < 0):
        hint = ("; inside a converted program the mean loss takes no ignored labels: "
                "to skip -100 labels there, compute F.cross_entropy(..., reduction='none') "
                "and average it over `labels != -100`") if (label == -100).any() else ""
        raise ValueError(f"cross_entropy: labels must lie in [0, {n_classes}), got "
                         f"[{label.min()}, {label.max()}]{hint}")


def _cross_entropy_kernel(logits, label):
    """(mean loss, softmax): the probabilities are an output so that the
    gradient reuses them instead of computing the softmax again."""
    _check_labels(label, logits.shape[-1])
    z, e, s = _shifted_exp(logits, -1)
    rows = np.arange(label.shape[0])
    loss = np.true_divide(np.add.reduce(np.log(s[:, 0]) - z[rows, label]), label.shape[0])
    e /= s
    return np.asarray(loss, dtype=logits.dtype), e


def _cross_entropy_infer(logits, label):
    if len(logits.shape) != 2 or len(label.shape) != 1:
        raise ValueError(f"cross_entropy: expects logits (N, C) and int64 labels (N,), "
                         f"got {tuple(logits.shape)} and {tuple(label.shape)}")
    if not np.issubdtype(np.dtype(label.dtype), np.integer):
        raise TypeError(f"cross_entropy: labels must be integer class indices, got {label.dtype}")
    return Aval((), logits.dtype), Aval(tuple(logits.shape), logits.dtype)


def _cross_entropy_vjp(g, out, logits, label):
    g_loss, g_probs = g
    probs = out[1]
    grad = None
    if g_loss is not None:
        grad = bind("cross_entropy_grad", g_loss, probs, label)
    if g_probs is not None:  # someone used the probabilities too: softmax's rule
        (extra,) = _softmax_vjp(g_probs, probs, logits, len(logits.shape) - 1)
        grad = extra if grad is None else grad + extra
    return grad, None


# Mean softmax cross-entropy of (N, C) logits and (N,) int labels; the second
# output is softmax(logits).
register_op("cross_entropy", _cross_entropy_kernel, _cross_entropy_infer,
            vjp=_cross_entropy_vjp, num_outputs=2, fresh=True, checks=True)


def _cross_entropy_grad_kernel(g, probs, label, out=None):
    # `out`: a buffer the compiled executor gives (the dead probabilities' own
    # array, usually: then nothing is copied); the same values either way.
    if out is None:
        p = probs.copy()
    else:
        p = out
        if out is not probs:
            np.copyto(out, probs)
    p[np.arange(label.shape[0]), label] -= 1
    p *= (g / label.shape[0]).astype(p.dtype)
    return p


def _cross_entropy_grad_vjp(gg, out, g, probs, label):
    # out = (probs - onehot(label)) * g / N: linear in g and in probs.
    unit = bind("cross_entropy_grad", bind("full_like", g, fill_value=1, dtype=None),
                probs, label)
    n = cast(bind("numel", label, axes=None), g.dtype)
    return cast(_sum(gg * unit), g.dtype), cast(gg * (g / n), probs.dtype), None


register_op("cross_entropy_grad", _cross_entropy_grad_kernel,
            lambda g, probs, label: Aval(tuple(probs.shape), probs.dtype),
            vjp=_cross_entropy_grad_vjp, writes_out=True)


def cross_entropy(logits, label):
    """Mean softmax cross-entropy; `label` holds int64 class indices (N,)."""
    return bind("cross_entropy", lift(logits), lift(label))[0]


# ---- gelu (composite over erf / tanh) ----------------------------------------------------
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x, approximate=False):
    """GELU: exact `x * Phi(x)` via erf, or the tanh approximation."""
    x = lift(x)
    if approximate:
        return 0.5 * x * (1.0 + tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))


# ---- softplus: log(1 + exp(x)) without overflow or cancellation ----------------------------
def _softplus_kernel(x):
    return np.logaddexp(np.zeros((), x.dtype), x)


def _softplus_vjp(g, out, x):
    from .elementwise import sigmoid
    return (g * sigmoid(x),)


register_op("softplus", _softplus_kernel, same_infer, _softplus_vjp)


def softplus(x):
    """`log(1 + exp(x))` (beta 1, no threshold: `d2s.nn.functional.softplus` adds them)."""
    return bind("softplus", lift(x))
