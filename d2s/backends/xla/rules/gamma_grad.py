"""xla rule of `standard_gamma_grad` (`d2s/core/ops/gamma_grad.py`): JAX's
`random_gamma_grad`, the same implicit derivative, in the numpy kernel's dtype."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering


def _standard_gamma_grad(ns, x, alpha):
    dtype = np.result_type(np.dtype(x.dtype), np.dtype(alpha.dtype))
    x64 = ns.jnp.asarray(x).astype(ns.jnp.float64)
    a64 = ns.jnp.asarray(alpha).astype(ns.jnp.float64)
    x64, a64 = ns.jnp.broadcast_arrays(x64, a64)
    return ns.lax.random_gamma_grad(a64, x64).astype(dtype)


register_lowering("xla", "standard_gamma_grad", _standard_gamma_grad)
