"""ONNX rules of `undefined`, `cast_if_defined` and `zeros_if_defined` (`d2s/static/control_ops/undefined.py`)."""
from __future__ import annotations

from ....core.registry import NotLowerable, register_lowering
from ....static.control_ops.undefined import CAST_IF_DEFINED, UNDEFINED, ZEROS_IF_DEFINED


def _lower_onnx(ex, op, graph, env):
    """A zero placeholder: d2s raises `NameError` if such a value is read, an
    ONNX model reads the zeros (documented in README)."""
    v = op.outputs[0]
    env.set(v.name, ex.zeros(graph, v).with_shape(v.shape))


def _lower_cast_onnx(ex, op, graph, env):
    """A Cast (ONNX values always exist: an undefined one is zeros, see `undefined`)."""
    ns = ex.namespace(graph, op)
    env.set(op.outputs[0].name, ns.cast(env.get(op.inputs[0].name), op.outputs[0].dtype))


register_lowering("onnx", UNDEFINED, _lower_onnx)
register_lowering("onnx", CAST_IF_DEFINED, _lower_cast_onnx)
register_lowering("onnx", ZEROS_IF_DEFINED,
                  NotLowerable("a gradient op: an exported model is the forward program"))
