"""`d2s.onnx.export`: a converted function or Layer as an ONNX model.

Deploy with any engine that reads ONNX (ONNX Runtime, TensorRT, OpenVINO):
`cond` becomes `If`, `while` becomes `Loop`, `None` dims of the input spec
become symbolic dims, weights become initializers. Each op's ONNX form is
a rule in `rules/`, one module per op family (`register_lowering("onnx",
op, rule)`).

This package is the only one that imports `onnx`, and only when a model is
exported: `import d2s` (and this module) never does. Install the extra with
`pip install d2s[onnx]`.
"""
from __future__ import annotations

import os

from ..jit.save_load import traced_program
from .errors import ExportError

__all__ = ["export", "to_model", "ExportError"]


def _load_exporter():
    try:
        from . import exporter
    except ImportError as e:
        if getattr(e, "name", None) == "onnx" or "onnx" in str(e):
            raise ImportError("d2s.onnx needs the onnx package: pip install 'd2s[onnx]'") \
                from e
        raise
    return exporter


def to_model(layer_or_function, input_spec=None, opset_version=None):
    """The `onnx.ModelProto` that `export` writes (checked by ONNX's full checker)."""
    exporter = _load_exporter()
    opset = exporter.check_opset(opset_version)
    concrete = traced_program(layer_or_function, input_spec, "d2s.onnx.export")
    return exporter.program_to_model(concrete, opset)


def export(layer_or_function, path, input_spec=None, opset_version=None):
    """Write the ONNX model of `layer_or_function` to `path`; returns the path
    written. A `path` not ending in `.onnx` is a prefix, as in PaddlePaddle's
    `paddle.onnx.export(model, "out/model")`: the file is `out/model.onnx`
    (where a ported script then opens it).

    `layer_or_function`: a `to_static` function, a Layer (its forward is
    converted), or a plain function. `input_spec`: a list of `InputSpec`s (or
    example Tensors / arrays; other values are passed as they are); by
    default the one given to `to_static`. `opset_version`: default
    `DEFAULT_OPSET`. Ops with no ONNX form (print, assert, raise, random
    draws) raise `ExportError` naming the op and the user's line; nothing is
    written then. An unwritable `path` raises the OS error.
    """
    data = to_model(layer_or_function, input_spec, opset_version).SerializeToString()
    path = os.fspath(path)
    if not path.endswith(".onnx") and not os.path.isdir(path):  # (a directory: the OS error)
        path += ".onnx"
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError:
        if os.path.isfile(path) and os.path.getsize(path) != len(data):
            os.remove(path)  # a partial write (e.g. a full disk) leaves nothing behind
        raise
    return path
