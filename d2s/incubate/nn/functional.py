"""`d2s.incubate.nn.functional`: `swiglu`."""
from __future__ import annotations

from ...core.ops._base import lift
from ...nn.activation_functional import silu

__all__ = ["swiglu"]


def swiglu(x, y=None, name=None):
    """`silu(x) * y`; without `y`, `x` is cut in two halves along its last axis."""
    x = lift(x)
    if y is None:
        n = x.shape[-1]
        if n is None or n % 2:
            raise ValueError(f"swiglu: without y, the last dim of x must be known and even, "
                             f"got shape {list(x.shape)}")
        x, y = x[..., :n // 2], x[..., n // 2:]
    return silu(x) * y
