"""Shared helpers for the core tests: central finite differences."""
from __future__ import annotations

import numpy as np
import pytest


def numeric_grad(f, inputs, wrt, eps=1e-6):
    """Central finite differences of scalar `f(*inputs)` w.r.t. `inputs[i]`, i in `wrt`.

    `inputs` are numpy arrays; each perturbed call gets fresh copies, so `f`
    may not rely on (or corrupt) the caller's arrays.
    """
    grads = []
    for i in wrt:
        base = np.array(inputs[i], dtype=np.float64)
        g = np.zeros_like(base)
        for j in np.ndindex(base.shape):
            vals = []
            for sign in (1.0, -1.0):
                x = base.copy()
                x[j] += sign * eps
                args = [np.array(a, copy=True) for a in inputs]
                args[i] = x.astype(np.asarray(inputs[i]).dtype)
                vals.append(float(f(*args)))
            g[j] = (vals[0] - vals[1]) / (2 * eps)
        grads.append(g)
    return grads


@pytest.fixture
def numgrad():
    return numeric_grad
