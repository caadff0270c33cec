"""ONNX has no form for parameter updates: an exported model's weights are constants."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering

_UPDATES = NotLowerable("it updates a parameter in place; the weights of an ONNX model are "
                        "constants (export the forward, not a training step)")
for _op in ("momentum_update", "rmsprop_update", "adagrad_update", "adamw_update",
            "adamax_update"):
    register_lowering("onnx", _op, _UPDATES)


_UPDATES_WEIGHTS = NotLowerable("it updates a parameter in place; the weights of an ONNX model "
                                "are constants (export the forward, not a training step)")


register_lowering("onnx", "sgd_update", _UPDATES_WEIGHTS)
register_lowering("onnx", "adam_update", _UPDATES_WEIGHTS)
