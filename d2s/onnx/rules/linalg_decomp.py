"""ONNX forms of the decompositions and solves (`d2s/core/ops/linalg_decomp.py`):
ONNX has Det (without an ONNX Runtime kernel at
d2s's opsets) and no factorization or solver."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering


register_lowering("onnx", "det", NotLowerable(
    "ONNX Runtime has no kernel for Det at the opsets d2s exports (18 and later resolve to "
    "Det-22; its CPU kernels stop at 11)"))


for _op in ("slogdet", "solve", "cholesky", "qr", "svd", "eigh", "pinv", "lu", "eig"):
    register_lowering("onnx", _op, NotLowerable(
        f"ONNX's standard operator set has no {_op} (of linear algebra it has Det and "
        "MatMul only)"))
