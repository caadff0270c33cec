"""xla rule of `var` (`d2s/core/ops/counting.py`); the other counting ops are
compositions of existing ops."""
from __future__ import annotations

from ....core.registry import register_lowering


def _var(ns, x, axes, unbiased, keepdim):
    return ns.jnp.var(x, axis=axes, ddof=1 if unbiased else 0, keepdims=keepdim)


register_lowering("xla", "var", _var)
