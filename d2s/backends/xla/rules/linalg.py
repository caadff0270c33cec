"""xla rule of `matmul` (`d2s/core/ops/linalg.py`), at the highest precision."""
from __future__ import annotations

from ....core.registry import register_lowering


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
