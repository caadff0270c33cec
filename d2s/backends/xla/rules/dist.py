"""xla rule of `reshard` (`d2s/core/ops/dist_ops.py`): a sharding constraint."""
from __future__ import annotations

from ....core.registry import NotLowerable, register_lowering


register_lowering("xla", "reshard",
                  lambda ns, x, mesh, placements: ns.sharding_constraint(x, mesh, placements))

register_lowering("xla", "c_allreduce_sum", NotLowerable(
    "a cross-process all-reduce over MPI runs on the host (the numpy backend); xla "
    "processes reduce through shardings"))
