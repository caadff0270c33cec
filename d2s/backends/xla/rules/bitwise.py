"""xla rules of the bit shifts (`d2s/core/ops/bitwise.py`)."""
from __future__ import annotations

from ....core.registry import register_lowering
from ._base import promoted

register_lowering("xla", "bitwise_left_shift", promoted("left_shift"))
register_lowering("xla", "bitwise_right_shift", promoted("right_shift"))
