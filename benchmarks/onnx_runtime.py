"""Optional ONNX Runtime column: a workload's program exported with
`d2s.onnx` and run by ONNX Runtime (CPU, one thread).

Used only when `onnx` and `onnxruntime` import, for the inference
workloads that name their program (`Workload.program`: the to_static
function or Layer and its example arguments). The exported model is built
once; a call is one `InferenceSession.run` on the same inputs.
"""
from __future__ import annotations

import importlib.util

import numpy as np

COLUMN = "onnxruntime"


def available():
    return all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime"))


def modes(wl):
    """{COLUMN: zero-arg call} for workload `wl`, or {} when it names no program."""
    if not wl.program or not wl.no_grad:
        return {}
    import onnxruntime as ort

    import d2s
    import d2s.onnx

    fn, args = wl.program
    # tensors become inputs of the model; Python values are constants of it
    model = d2s.onnx.to_model(fn, input_spec=list(args))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    feeds = dict(zip(names, [np.asarray(a.numpy()) for a in args if isinstance(a, d2s.Tensor)]))
    run = session.run
    return {COLUMN: lambda: run(None, feeds)}
