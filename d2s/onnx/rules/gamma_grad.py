"""ONNX rule of `standard_gamma_grad` (`d2s/core/ops/gamma_grad.py`): none."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering

register_lowering("onnx", "standard_gamma_grad", NotLowerable(
    "its series runs until its terms vanish (a data-dependent count), and ONNX has no "
    "incomplete-gamma operator; it only differentiates Gamma draws, which do not export"))
