"""`d2s.incubate.nn.functional`: `swiglu`, `fused_rotary_position_embedding`."""
from __future__ import annotations

from ...core.ops._base import lift
from ...nn.activation_functional import silu

from .rope import fused_rotary_position_embedding  # noqa: E402,F401

__all__ = ["swiglu", "fused_rotary_position_embedding"]


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
