"""xla rules of the cumulative ops (`d2s/core/ops/scan.py`), in NumPy 2's
result dtype (jnp's cumsum of int32 stays int32; NumPy's is int64)."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering


def _scan(fn_name):
    def rule(ns, x, axis, reverse):
        jnp = ns.jnp
        dtype = getattr(np, fn_name)(np.zeros(1, x.dtype)).dtype
        if reverse:
            x = jnp.flip(x, axis)
        out = getattr(jnp, fn_name)(x, axis=axis, dtype=dtype)
        return jnp.flip(out, axis) if reverse else out
    rule.__name__ = f"xla_{fn_name}"
    return rule


register_lowering("xla", "cumsum", _scan("cumsum"))
register_lowering("xla", "cumprod", _scan("cumprod"))
