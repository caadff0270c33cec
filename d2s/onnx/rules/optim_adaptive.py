"""ONNX has no form for parameter updates (NAdam, RAdam, Rprop, ASGD): an
exported model's weights are constants."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering

_UPDATES = NotLowerable("it updates a parameter in place; the weights of an ONNX model are "
                        "constants (export the forward, not a training step)")
for _op in ("nadam_update", "radam_update", "rprop_update", "asgd_update"):
    register_lowering("onnx", _op, _UPDATES)
