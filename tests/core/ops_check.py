"""One check for a tensor-level d2s function (the issue-27 op families), used
by tests/core/test_ops_<family>.py:

* eager: each output equals the numpy reference (shape, dtype, values);
* gradients: for float64 inputs, `sum(out * r)` differentiated by `.backward()`
  equals central finite differences of the *reference*;
* static: the same function converted with `to_static` on the numpy and the
  xla backend (no fallback to numpy allowed) gives the eager numbers; and a
  Program whose inputs have every dim unknown (`None`) runs to them too;
* ONNX: the program exported (known dims and unknown dims) and run in ONNX
  Runtime gives the eager numbers.
"""
from __future__ import annotations

import warnings

import numpy as np

import d2s
from d2s import static
from d2s.static.backend import BackendFallbackWarning


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _np(x):
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x)


def assert_same(got, want, what, rtol=1e-6, atol=1e-12):
    got, want = _np(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def _finite_differences(f, arrays, wrt, eps=1e-6):
    grads = []
    for i in wrt:
        base = np.array(arrays[i], dtype=np.float64)
        g = np.zeros_like(base)
        for j in np.ndindex(base.shape):
            vals = []
            for sign in (1.0, -1.0):
                args = [np.array(a, copy=True) for a in arrays]
                x = base.copy()
                x[j] += sign * eps
                args[i] = x
                vals.append(f(*args))
            g[j] = (vals[0] - vals[1]) / (2 * eps)
        grads.append(g)
    return grads


def _run_program(fn, arrays, dims_known, unknown="all"):
    def shape(a):
        if dims_known:
            return a.shape
        if unknown == "first":  # only the leading (batch) dim unknown
            return (None,) + a.shape[1:] if a.ndim else ()
        return [None] * a.ndim
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data(f"x{i}", shape(a), a.dtype) for i, a in enumerate(arrays)]
        outs = _tuple(fn(*xs))
    return prog, xs, list(outs)


def check(fn, arrays, ref, grad=True, xla=True, onnx=True, unknown_dims=True, rtol=1e-6,
          grad_rtol=1e-5, unknown="all"):
    """Run every check above; `ref(*arrays)` gives the expected outputs.
    `unknown="first"`: the unknown-dims program leaves only each input's
    first dim unknown (ops that need some dims while building)."""
    arrays = [np.asarray(a) for a in arrays]
    want = [np.asarray(w) for w in _tuple(ref(*arrays))]
    wrt = [i for i, a in enumerate(arrays) if a.dtype == np.float64] if grad else []
    ts = [d2s.to_tensor(a, stop_gradient=i not in wrt) for i, a in enumerate(arrays)]
    outs = _tuple(fn(*ts))
    assert len(outs) == len(want), f"{len(outs)} outputs, the reference has {len(want)}"
    for k, (o, w) in enumerate(zip(outs, want)):
        assert_same(o, w, f"eager output {k}", rtol)
    floats = [k for k, w in enumerate(want) if w.dtype.kind == "f"]
    if wrt and floats:
        rng = np.random.default_rng(len(arrays) * 7 + sum(a.size for a in arrays))
        r = {k: rng.standard_normal(want[k].shape) for k in floats}
        loss = None
        for k in floats:
            term = d2s.sum(outs[k] * d2s.to_tensor(r[k]))
            loss = term if loss is None else loss + term
        loss.backward()

        def f(*args):
            return sum(float(np.sum(np.asarray(_tuple(ref(*args))[k], np.float64) * r[k]))
                       for k in floats)
        for i, fd in zip(wrt, _finite_differences(f, arrays, wrt)):
            got = ts[i].grad
            got = np.zeros_like(fd) if got is None else got.numpy()
            np.testing.assert_allclose(got, fd, rtol=grad_rtol, atol=1e-6,
                                       err_msg=f"gradient of input {i}")
    eager = [_np(o) for o in outs]
    backends = ["numpy"] + (["xla"] if xla else [])
    for backend in backends:
        with warnings.catch_warnings():
            warnings.simplefilter("error", BackendFallbackWarning)
            sf = d2s.jit.to_static(lambda *xs: fn(*xs), backend=backend)
            got = _tuple(sf(*[d2s.to_tensor(a) for a in arrays]))
        for k, (g, e) in enumerate(zip(got, eager)):
            assert_same(g, e, f"to_static({backend}) output {k}", rtol)
    variants = [True] + ([False] if unknown_dims else [])
    for known in variants:
        prog, xs, vs = _run_program(fn, arrays, known, unknown)
        got = static.Executor().run(prog, feed={f"x{i}": a for i, a in enumerate(arrays)},
                                    fetch_list=vs)
        for k, (g, e) in enumerate(zip(got, eager)):
            assert_same(g, e, f"Executor output {k} (dims {'known' if known else 'None'})",
                        rtol)
        if onnx:
            _onnx(prog, xs, vs, arrays, eager, known, rtol)


def _onnx(prog, xs, vs, arrays, eager, known, rtol):
    import pytest
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from d2s.onnx.exporter import export_program
    model = export_program(prog, prog.global_block().ops, xs, vs)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    got = sess.run(None, dict(zip(names, arrays)))
    for k, (g, e) in enumerate(zip(got, eager)):
        assert_same(g, e, f"ONNX output {k} (dims {'known' if known else 'None'})",
                    max(rtol, 1e-5), atol=1e-6)
