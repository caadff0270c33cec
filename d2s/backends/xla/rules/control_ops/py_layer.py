"""xla rule of `py_layer` (`d2s/static/control_ops/py_layer.py`): its values pass through."""
from __future__ import annotations

from .....core.registry import register_lowering
from .....static.control_ops.py_layer import PY_LAYER


def _lower_xla(low, op, env):
    """The values pass through (the forward's ops are lowered before it)."""
    for v, src in zip(op.outputs, op.inputs):
        env.set(v.name, env.get(src.name))


register_lowering("xla", PY_LAYER, _lower_xla)
