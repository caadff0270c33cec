"""xla rule of batch normalization's statistics op (`d2s/core/ops/norm_ops.py`):
the same mean / centred variance / division jax.numpy code a hand-written
`jax.jit` model has, so XLA fuses it the same way."""
from __future__ import annotations

from ....core.registry import register_lowering


def _batch_normalize_xla(ns, x, axes, epsilon):
    jnp = ns.jnp
    mu = jnp.mean(x, axis=axes, keepdims=True)
    centered = x - mu
    var = jnp.mean(centered * centered, axis=axes, keepdims=True)
    return centered / jnp.sqrt(var + epsilon), mu, var


register_lowering("xla", "batch_normalize", _batch_normalize_xla)
