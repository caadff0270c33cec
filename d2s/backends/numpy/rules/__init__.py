"""The numpy backend's rules: how its code generator writes each control
op (`control_ops`). Core ops need none (each becomes a call of its registry
kernel), so this target declares rules only where it has them, and loads
with the numpy backend (with `import d2s`), unlike the xla and ONNX rules."""
from __future__ import annotations

from ....core.registry import declare_target

declare_target("numpy", __name__, every_op=False)  # core ops: their kernels

from . import control_ops  # noqa: E402,F401
