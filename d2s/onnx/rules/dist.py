"""ONNX rule of `reshard` (`d2s/core/ops/dist_ops.py`): the value itself."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering


register_lowering("onnx", "reshard", lambda ns, x, mesh, placements: x)

register_lowering("onnx", "c_allreduce_sum", NotLowerable(
    "a cross-process all-reduce over MPI; an exported model runs in one process"))
