"""`ExportError` and `Unsupported`, importable without onnx installed."""
from __future__ import annotations


class ExportError(ValueError):
    """A program that cannot become an ONNX model: an op with no ONNX form
    (print, assert, raise, random draws, ...), named with the user's file and
    line, or a model that ONNX's checker rejects. Nothing is written."""


class Unsupported(Exception):
    """Raised by an ONNX rule for operands it cannot map (e.g. an index form
    with no ONNX equivalent); the exporter turns it into an `ExportError`
    naming the op and the user's line."""
