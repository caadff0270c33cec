"""numpy rule of `py_layer` (`d2s/static/control_ops/py_layer.py`): its
forward's values, bound to its outputs."""
from __future__ import annotations

from .....core.registry import register_lowering
from .....static.control_ops.py_layer import PY_LAYER


def _emit(em, op, indent):
    for v, src in zip(op.outputs, op.inputs):
        em.emit(f"{em.ident(v.name)} = {em.ident(src.name)}", indent, op)


register_lowering("numpy", PY_LAYER, _emit)
