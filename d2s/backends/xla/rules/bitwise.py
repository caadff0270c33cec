"""xla rules of the bitwise ops (`d2s/core/ops/bitwise.py`)."""
from __future__ import annotations

from ....core.registry import register_lowering
from ._base import promoted

register_lowering("xla", "bitwise_and", promoted("bitwise_and"))
register_lowering("xla", "bitwise_or", promoted("bitwise_or"))
register_lowering("xla", "bitwise_xor", promoted("bitwise_xor"))
register_lowering("xla", "bitwise_not", lambda ns, x: ns.jnp.invert(x))
register_lowering("xla", "bitwise_left_shift", promoted("left_shift"))
register_lowering("xla", "bitwise_right_shift", promoted("right_shift"))
