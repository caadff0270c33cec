"""ONNX rule of `array_append` (`d2s/static/tensor_array.py`)."""
from __future__ import annotations

from ...core.registry import register_lowering
from ...static import tensor_array as _tensor_array  # noqa: F401  (declares array_append)


def _append_onnx(ns, buf, value):
    """`Concat(buf, value[None])`. An append a loop can stack itself never gets
    here: the `while` rule makes it a `Loop` scan output."""
    row = ns.node("Unsqueeze", ns.cast(value, buf.dtype), ns.ints([0]))
    shape = ns.outputs[0].shape
    return ns.concat_rows(buf, row.with_shape((1,) + shape[1:]), shape)


register_lowering("onnx", "array_append", _append_onnx)
