"""ONNX forms of the Fourier transforms and complex helpers
(`d2s/core/ops/fft_ops.py`): none. ONNX's DFT holds complex values as a
trailing pair of reals, and d2s's exporter carries no complex tensors."""
from __future__ import annotations

from ...core.registry import NotLowerable, register_lowering

for _op in ("fft_c2c", "fft_c2c_adjoint", "fft_r2c", "fft_r2c_adjoint", "fft_c2r",
            "fft_c2r_adjoint", "real", "imag", "complex"):
    register_lowering("onnx", _op, NotLowerable(
        "it makes or reads complex values, which d2s's ONNX export does not carry (ONNX's "
        "DFT stores them as a trailing pair of reals)"))
