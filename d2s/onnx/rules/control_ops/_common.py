"""What the ONNX rules of several control ops share."""
from __future__ import annotations

from ....core.registry import NotLowerable

# The ONNX form of `cond_grad` and `while_grad`: none (a model is inference only).

NOT_EXPORTED = NotLowerable("a gradient op: an exported model is the forward program")
