"""xla rules of the nn ops (`d2s/core/ops/nn_ops.py`): softmaxes, cross entropy, activations."""
from __future__ import annotations

import numpy as np

from ....core.ops.nn_ops import IGNORED_LABEL
from ....core.registry import register_lowering
from ._tensor_arrays import _filled, _mask, _rows_of


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
    # Labels out of [0, C) but IGNORED_LABEL raise on numpy (XLA would clamp
    # them): the call runs again on numpy, which raises the error with the
    # labels it saw. Ignored rows add nothing and leave the mean's divisor.
    jnp = ns.jnp
    kept = label != IGNORED_LABEL
    ns.check_on_numpy(jnp.all(((label >= 0) & (label < logits.shape[-1])) | ~kept))
    z, e, s = _shifted_exp_xla(jnp, logits, -1)
    rows = np.arange(label.shape[0])
    per_row = jnp.log(s[:, 0]) - z[rows, jnp.where(kept, label, 0)]
    total = jnp.sum(jnp.where(kept, per_row, jnp.zeros((), per_row.dtype)))
    loss = total / jnp.sum(kept).astype(total.dtype)
    return loss.astype(logits.dtype), e / s


def _cross_entropy_grad_xla(ns, g, probs, label):
    jnp = ns.jnp
    kept = label != IGNORED_LABEL
    ones = jnp.where(kept, -1, 0).astype(probs.dtype)
    p = probs.at[np.arange(label.shape[0]), jnp.where(kept, label, 0)].add(ones)
    p = jnp.where(kept[:, None], p, jnp.zeros((), p.dtype))
    return p * (g / jnp.sum(kept).astype(g.dtype)).astype(p.dtype)


register_lowering("xla", "softmax", _softmax_xla)
register_lowering("xla", "log_softmax", _log_softmax_xla)
register_lowering("xla", "cross_entropy", _cross_entropy_xla)
register_lowering("xla", "cross_entropy_grad", _cross_entropy_grad_xla)
register_lowering("xla", "softplus", lambda ns, x: ns.jnp.logaddexp(ns.jnp.zeros((), x.dtype), x))


# ---- on tensor arrays (`_tensor_arrays`): the "tensor_array" variant -----------------
def _normalized(log):
    """softmax (`log`: log_softmax) of an array: over another axis, each entry
    past the length is a row of its own, never read; over its length, those
    entries are -inf first (exp gives 0) and 0 after, as a sum's padding."""
    def handler(ns, rule, x, axis):
        if axis != x.axis:
            return ns.TensorArray(rule(ns, x.buf, axis=axis), x.length, x.base, x.axis)
        ns.check_on_numpy(x.length > 0)  # numpy raises for the max of nothing
        if x.dtype.kind != "f":
            raise ns.Unsupported("it normalizes a tensor array of integers over its length")
        out = rule(ns, _filled(ns, x, -np.inf), axis=axis)
        return ns.TensorArray(ns.jnp.where(_mask(ns, x), out, ns.jnp.zeros((), out.dtype)),
                              x.length, x.base, x.axis)
    return handler


def _cross_entropy(ns, rule, logits, label):
    """The mean over the rows within the length: each row past it is
    ignored (label IGNORED_LABEL; logits 0 at class 0 and -inf elsewhere, so
    nothing it holds is read), so the rule's mean is over the rows; their
    probabilities are 0."""
    (logits, label), length = _rows_of(ns, [logits, label])
    if length is None:
        return rule(ns, logits, label)
    rows = ns.lax.broadcasted_iota(np.int64, (label.shape[0],), 0) < length
    if logits.dtype.kind != "f":
        raise ns.Unsupported("it takes the cross entropy of integer logits in a tensor array")
    classes = ns.lax.broadcasted_iota(np.int64, (1, logits.shape[1]), 1)
    empty_row = ns.jnp.where(classes == 0, 0, -np.inf).astype(logits.dtype)
    logits = ns.jnp.where(rows[:, None], logits, empty_row)
    label = ns.jnp.where(rows, label, ns.jnp.full((), IGNORED_LABEL, label.dtype))
    loss, probs = rule(ns, logits, label)
    probs = ns.jnp.where(rows[:, None], probs, ns.jnp.zeros((), probs.dtype))
    return loss.astype(logits.dtype), ns.TensorArray(probs, length, label.shape[0])


def _cross_entropy_grad(ns, rule, g, probs, label):
    """(probs - onehot(label)) * g / length at the rows within the length (those
    past it ignored, as in the forward)."""
    (probs, label), length = _rows_of(ns, [probs, label])
    if length is None:
        return rule(ns, g, probs, label)
    rows = ns.lax.broadcasted_iota(np.int64, (label.shape[0],), 0) < length
    label = ns.jnp.where(rows, label, ns.jnp.full((), IGNORED_LABEL, label.dtype))
    per_row = rule(ns, g, probs, label)
    return ns.TensorArray(ns.jnp.where(rows[:, None], per_row, ns.jnp.zeros((), per_row.dtype)),
                       length, label.shape[0])


register_lowering("xla", "softmax", _normalized(False), variant="tensor_array")
register_lowering("xla", "log_softmax", _normalized(True), variant="tensor_array")
register_lowering("xla", "cross_entropy", _cross_entropy, variant="tensor_array")
register_lowering("xla", "cross_entropy_grad", _cross_entropy_grad, variant="tensor_array")
