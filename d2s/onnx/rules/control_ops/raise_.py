"""ONNX rule of `raise` (`d2s/static/control_ops/raise_.py`): none."""
from __future__ import annotations

from ....core.registry import NotLowerable, register_lowering
from ....static.control_ops.raise_ import RAISE


register_lowering("onnx", RAISE,
                  NotLowerable("it raises an exception at run time; ONNX has no exceptions"))
