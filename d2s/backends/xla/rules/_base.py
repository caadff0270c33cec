"""Helpers shared by the xla rules of several op families."""
from __future__ import annotations

import numpy as np

from ....core.ops._base import probe_dtype


def promoted(fn_name):
    """XLA rule `jnp.<fn_name>(*operands)` after NumPy 2 promotion of the
    operands (JAX promotes int64 * float32 to float32; NumPy to float64)."""
    kernel = getattr(np, fn_name)

    def rule(ns, *xs):
        xs = ns.promote(*xs)
        # NumPy computes in its loop's type, which for these ops is the result's
        # (int32 / int32 in float64, bool // bool in int8); JAX's differ
        # (float32, int32). A comparison's bool result is no loop type.
        out = probe_dtype(kernel, *(np.dtype(x.dtype) for x in xs))
        # (A complex operand of a real result, abs's, is never cast: the cast
        # would drop its imaginary part.)
        if out != np.bool_ and np.dtype(xs[0].dtype) != out and \
                not (np.dtype(xs[0].dtype).kind == "c" and out.kind != "c"):
            xs = tuple(x.astype(out) for x in xs)
        return getattr(ns.jnp, fn_name)(*xs)
    rule.__name__ = f"xla_{fn_name}"
    return rule
