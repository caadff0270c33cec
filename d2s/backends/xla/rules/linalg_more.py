"""xla rule of `inverse` (`d2s/core/ops/linalg_more.py`)."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering


def _inverse(ns, x):
    dtype = np.linalg.inv(np.eye(2, dtype=x.dtype)).dtype  # an int matrix: float64
    out = ns.jnp.linalg.inv(ns.jnp.asarray(x).astype(dtype))
    # A singular matrix raises LinAlgError on numpy; XLA returns infs or NaNs
    # instead: a non-finite result runs the call again on numpy, which raises.
    ns.check_on_numpy(ns.jnp.all(ns.jnp.isfinite(out)))
    return out


register_lowering("xla", "inverse", _inverse)
