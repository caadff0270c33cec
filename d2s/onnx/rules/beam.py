"""`gather_tree` in ONNX: refused (a data-dependent backtrace loop; beam search
decoding is not part of an exported inference graph in d2s)."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering

register_lowering("onnx", "gather_tree", NotLowerable(
    "gather_tree (a beam-search backtrace loop) has no ONNX form in d2s; run the decoding "
    "loop outside the exported model"))
