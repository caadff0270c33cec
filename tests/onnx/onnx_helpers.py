"""Shared helpers of the ONNX tests: export a program, check it with ONNX's
full checker, run it in ONNX Runtime (CPU, one thread) and compare with the
eager numbers (identical dtypes and shapes, values to rtol 1e-5)."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from d2s.onnx.exporter import program_to_model  # noqa: E402  (after the skips)

# Ops with no ONNX form: programs holding them must raise ExportError.
UNEXPORTABLE = {"print", "assert", "raise", "uniform", "gaussian", "dropout"}


def session(model):
    """An ONNX Runtime session on one CPU thread for a ModelProto or a path."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def run_model(model, inputs):
    """Outputs of the model on `inputs` (arrays, in the model's input order)."""
    onnx.checker.check_model(model if isinstance(model, onnx.ModelProto) else str(model),
                             full_check=True)
    sess = session(model)
    names = [i.name for i in sess.get_inputs()]
    assert len(names) == len(inputs), f"model inputs {names}, given {len(inputs)} arrays"
    return sess.run(None, dict(zip(names, inputs)))


def export_and_run(concrete, inputs, opset_version=None):
    return run_model(program_to_model(concrete, opset_version), inputs)


def program_ops(program):
    return {op.type for op in program.all_ops()}


def assert_same(got, want, what, rtol=1e-5):
    """ONNX Runtime's `got` equals eager `want`: shape and dtype identical,
    values to `rtol` (exact for bools and ints; NaNs where NaNs are). An
    element near zero is compared to `rtol` times the tensor's largest
    magnitude: a sum that cancels keeps the rounding of its largest terms,
    whichever order adds them."""
    want_dtype = getattr(want, "dtype", None)
    want = np.asarray(want.numpy() if hasattr(want, "numpy") else want)
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if want_dtype is not None:
        assert got.dtype == np.dtype(want_dtype), f"{what}: dtype {got.dtype} != {want_dtype}"
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        finite = np.abs(want[np.isfinite(want)])
        scale = float(finite.max()) if finite.size else 0.0
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=max(rtol * scale, 1e-12), equal_nan=True, err_msg=what)
