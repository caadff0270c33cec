"""xla rule of `matmul` (`d2s/core/ops/linalg.py`), at the highest precision."""
from __future__ import annotations

from ....core.registry import register_lowering
from ._tensor_arrays import _as_plain, _mask, _padded


def _matmul_xla(ns, x, y):
    # HIGHEST: full float32 products on every device (GPUs default to TF32).
    x, y = ns.promote(x, y)
    highest = ns.lax.Precision.HIGHEST
    if x.ndim == 2 and y.ndim == 2 and x.dtype.kind in "fc":
        # The common case as one dot_general: jnp.matmul is itself a jitted
        # function, traced again per shape in every process (first calls).
        # An operand that is a matrix transpose (a gradient's `x.T @ g`) is
        # contracted along its other axis instead, as JAX's own autodiff
        # emits it: XLA's CPU compiler takes a third longer over a training
        # step whose products read explicit transposes.
        xt, yt = ns.transposed(x), ns.transposed(y)
        dims = ((0,) if xt is not None else (1,), (1,) if yt is not None else (0,))
        return ns.lax.dot_general(x if xt is None else xt, y if yt is None else yt,
                                  (dims, ((), ())), precision=highest)
    return ns.jnp.matmul(x, y, precision=highest)


register_lowering("xla", "matmul", _matmul_xla)


# ---- on tensor arrays (`_tensor_arrays`): the "tensor_array" variant -----------------
def _matmul(ns, rule, x, y):
    xa, ya = ns.is_tensor_array(x), ns.is_tensor_array(y)
    if xa and ya:  # contracting the run-time length: x's last axis, y's rows
        if x.axis != x.ndim - 1 or y.ndim < 2 or y.axis != y.ndim - 2:
            raise ns.Unsupported("a matmul of two tensor arrays other than over their length")
        ns.check_on_numpy(x.length == y.length)
        capacity = max(x.buf.shape[x.axis], y.buf.shape[y.axis])
        xs = _padded(ns, ns.TensorArray(ns.jnp.where(_mask(ns, x), x.buf, 0), x.length, x.base,
                                        x.axis), capacity)
        ys = _padded(ns, ns.TensorArray(ns.jnp.where(_mask(ns, y), y.buf, 0), y.length, y.base,
                                        y.axis), capacity)
        return rule(ns, xs, ys)
    if xa and x.ndim >= 2 and x.axis < x.ndim - 1 and y.ndim <= 2:
        return ns.TensorArray(rule(ns, x.buf, y), x.length, x.base, x.axis)
    if ya and y.ndim >= 2 and y.axis == y.ndim - 1 and x.ndim <= 2:
        return ns.TensorArray(rule(ns, x, y.buf), y.length, y.base,
                           y.axis - (1 if x.ndim == 1 else 0))
    if xa and x.axis == x.ndim - 1 and y.ndim >= 2:  # contracting with y's rows
        return rule(ns, _as_plain(ns, x, y.shape[-2]), y)
    if ya and y.ndim >= 2 and y.axis == y.ndim - 2:
        return rule(ns, x, _as_plain(ns, y, x.shape[-1]))
    raise ns.Unsupported("a matmul that contracts a tensor array's run-time length with a "
                      "plain array")


register_lowering("xla", "matmul", _matmul, variant="tensor_array")
