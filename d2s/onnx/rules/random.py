"""ONNX rules of the sampling ops (`d2s/core/ops/random_ops.py`): none."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering


_RANDOM = NotLowerable("a random draw from d2s's numpy generator, which an ONNX model cannot "
                       "reproduce (for dropout: call .eval() on the layer before exporting)")


register_lowering("onnx", "uniform", _RANDOM)
register_lowering("onnx", "gaussian", _RANDOM)
register_lowering("onnx", "dropout", _RANDOM)
register_lowering("onnx", "python_draw", NotLowerable(
    "a number drawn by Python's or numpy's random generator on every run (np.random.beta, "
    "random.random): an ONNX model cannot call it; pass the number as an input"))
