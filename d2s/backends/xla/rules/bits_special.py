"""xla rules of the bitwise ops and shifts (`d2s/core/ops/bits_special.py`): jnp's,
after NumPy 2 promotion of the operands."""
from __future__ import annotations

from ._base import promoted
from ....core.registry import register_lowering

for _op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    register_lowering("xla", _op, promoted(_op))
register_lowering("xla", "bitwise_not", lambda ns, x: ns.jnp.invert(x))
register_lowering("xla", "bitwise_left_shift", promoted("left_shift"))
register_lowering("xla", "bitwise_right_shift", promoted("right_shift"))
