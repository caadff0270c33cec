"""xla rule of `reshard` (`d2s/core/ops/dist_ops.py`): a sharding constraint."""
from __future__ import annotations

from ....core.registry import register_lowering


register_lowering("xla", "reshard",
                  lambda ns, x, mesh, placements: ns.sharding_constraint(x, mesh, placements))
