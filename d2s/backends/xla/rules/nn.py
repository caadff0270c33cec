"""xla rules of the nn ops (`d2s/core/ops/nn_ops.py`): softmaxes, cross entropy, activations."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering


def _shifted_exp_xla(jnp, x, axis):
    """`_shifted_exp` in jax.numpy (no in-place updates)."""
    z = x - jnp.max(x, axis=axis, keepdims=True)
    e = jnp.exp(z)
    return z, e, jnp.sum(e, axis=axis, keepdims=True)


def _softmax_xla(ns, x, axis):
    _, e, s = _shifted_exp_xla(ns.jnp, x, axis)
    return e / s


def _log_softmax_xla(ns, x, axis):
    z, _, s = _shifted_exp_xla(ns.jnp, x, axis)
    return z - ns.jnp.log(s)


def _cross_entropy_xla(ns, logits, label):
    # Labels out of [0, C) raise on numpy (XLA would clamp them): the call runs
    # again on numpy, which raises the error with the labels it saw.
    ns.check_on_numpy(ns.jnp.all((label >= 0) & (label < logits.shape[-1])))
    z, e, s = _shifted_exp_xla(ns.jnp, logits, -1)
    rows = np.arange(label.shape[0])
    loss = ns.jnp.sum(ns.jnp.log(s[:, 0]) - z[rows, label]) / label.shape[0]
    return loss.astype(logits.dtype), e / s


def _cross_entropy_grad_xla(ns, g, probs, label):
    p = probs.at[np.arange(label.shape[0]), label].add(-1)
    return p * (g / label.shape[0]).astype(p.dtype)


register_lowering("xla", "softmax", _softmax_xla)
register_lowering("xla", "log_softmax", _log_softmax_xla)
register_lowering("xla", "cross_entropy", _cross_entropy_xla)
register_lowering("xla", "cross_entropy_grad", _cross_entropy_grad_xla)
register_lowering("xla", "softplus", lambda ns, x: ns.jnp.logaddexp(ns.jnp.zeros((), x.dtype), x))
