"""`x[i] = v` in converted code: a functional `set_item` the name is rebound
to (carried through tensor `if`/`while`, indexed by a tensor loop counter),
the same numbers and gradients as eager code on the numpy and xla backends,
ONNX export, Python containers keeping Python's semantics, a Layer buffer
written through the trace's state overlay, and bad input naming the user's
line."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static.backend import BackendFallbackWarning

_THIS_FILE = os.path.abspath(__file__)
rng = np.random.default_rng(1)


def T(v, dtype=np.float64, grad=False):
    return d2s.to_tensor(np.array(v, dtype), stop_gradient=not grad)


def rows_in_tensor_while(x, n):
    y = x * 1.0
    i = d2s.to_tensor(0)
    while i < n:
        y[i] = y[i] * 2.0 + 1.0      # a tensor loop counter as the index
        i += 1
    return y


def branch_and_slices(x):
    y = x * 1.0
    if x.sum() > 0:
        y[0, 1:] = -1.0
    else:
        y[..., 0] = x[..., 1] * 3.0
    y[-1] += 2.0
    return y


def nested_and_none(x, v):
    y = x + 0.0
    y[1, 2] = v[0]
    y[None, 2, :2] = v
    return y


def index_tensors(x, idx, v):
    y = x * 2.0
    y[idx] = v
    y[:, idx] = 0.5 * y[:, idx]
    return y


def python_containers(x):
    acc = [x * 0.0, 0]
    state = {"n": 0}
    for k in range(3):
        acc[0] = acc[0] + x
        acc[1] += 1
        state["n"] += k
    return acc[0] * acc[1] + state["n"]


X = rng.standard_normal((3, 4))
V = rng.standard_normal(4)
CASES = [
    (rows_in_tensor_while, lambda: (T(X), T(2, np.int64))),
    (branch_and_slices, lambda: (T(X),)),
    (branch_and_slices, lambda: (T(-np.abs(X)),)),
    (nested_and_none, lambda: (T(X), T([5.0, 6.0]))),
    (index_tensors, lambda: (T(X), T([2, 0], np.int64), T(V))),
    (python_containers, lambda: (T(X),)),
]


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn, args", CASES, ids=[f"{c[0].__name__}{i}" for i, c in
                                                  enumerate(CASES)])
def test_converted_item_assignment_equals_eager(fn, args, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    want = fn(*args()).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)  # xla runs it all
        got = to_static(fn, backend=backend)(*args()).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_converted_gradients_equal_eager_for_x_and_v():
    def f(x, v, idx):
        y = x * x
        y[idx, 1:3] = v * v
        if y.sum() > 0:
            y[0] = y[0] * 3.0
        return (y * y).sum()

    def grads(fn):
        x, v = T(X, grad=True), T([0.3, -0.7], grad=True)
        fn(x, v, T([2], np.int64)).backward()
        return x.grad.numpy(), v.grad.numpy()
    eager = grads(f)
    static = grads(to_static(f))
    for e, s in zip(eager, static):
        np.testing.assert_allclose(s, e, rtol=1e-10)
    # and eager against central finite differences (float64)
    eps, base = 1e-6, X.copy()
    fd = np.zeros_like(base)
    for j in np.ndindex(base.shape):
        vals = []
        for sign in (1, -1):
            b = base.copy()
            b[j] += sign * eps
            vals.append(float(f(T(b), T([0.3, -0.7]), T([2], np.int64))))
        fd[j] = (vals[0] - vals[1]) / (2 * eps)
    np.testing.assert_allclose(eager[0], fd, rtol=1e-5, atol=1e-6)


def test_layer_buffer_item_assignment_is_written_back_by_the_program():
    class Cache(d2s.nn.Layer):
        def __init__(self):
            super().__init__()
            self.register_buffer("buf", d2s.to_tensor(np.zeros((3, 2))))

        def forward(self, x, i):
            self.buf[i] = x
            return self.buf.sum()

    eager, static = Cache(), Cache()
    fn = to_static(static.forward)
    for k, i in enumerate([0, 2, 0]):
        x = T([k + 1.0, 2.0 * k])
        want = eager(x, T(i, np.int64)).numpy()
        got = fn(x, T(i, np.int64)).numpy()
        np.testing.assert_allclose(got, want)
        np.testing.assert_allclose(static.buf.numpy(), eager.buf.numpy())


def test_onnx_export_of_item_assignment():
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    f = to_static(index_tensors)
    args = (T(X), T([2, 0], np.int64), T(V))
    want = f(*args).numpy()
    model = d2s.onnx.to_model(f)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    got = sess.run(None, dict(zip(names, [a.numpy() for a in args])))[0]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def value_does_not_fit(x):
    y = x * 1.0
    y[0] = d2s.ones([3])  # LOC:fit
    return y


def non_integer_index(x, i):
    y = x * 1.0
    y[i] = 0.0  # LOC:float-index
    return y


def out_of_range(x):
    y = x * 1.0
    y[7] = 0.0  # LOC:range
    return y


def _line_of(tag):
    with open(_THIS_FILE) as fh:
        lines = fh.read().splitlines()
    return [k + 1 for k, line in enumerate(lines) if line.rstrip().endswith(f"# LOC:{tag}")][0]


@pytest.mark.parametrize("fn, args, error, match, tag", [
    (value_does_not_fit, (T(X),), ValueError, r"shape \(3,\) does not broadcast", "fit"),
    (non_integer_index, (T(X), T([0.5])), IndexError, "integer", "float-index"),
    (out_of_range, (T(X),), IndexError, "out of bounds", "range"),
])
def test_bad_item_assignment_names_the_users_line(fn, args, error, match, tag):
    with pytest.raises(error, match=match) as info:
        to_static(fn)(*args)
    text = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert os.path.basename(_THIS_FILE) in text and f"line {_line_of(tag)}" in text, text


def test_an_attribute_of_a_plain_object_is_rebound_too():
    class Holder:
        pass

    def f(x):
        h = Holder()
        h.y = x * 1.0
        h.y[0] = 0.0
        return h.y
    np.testing.assert_allclose(to_static(f)(T(X)).numpy(), f(T(X)).numpy())


def test_a_program_value_held_in_a_container_is_written_in_place():
    def f(x):
        d = {"y": x * 1.0}
        d["y"][0] = 0.0     # an in-place write of the tensor (static.rebinding)
        return d["y"]
    np.testing.assert_array_equal(to_static(f)(T(X)).numpy(), f(T(X)).numpy())


def runtime_index(x, i):
    y = x * 1.0
    y[i] = 0.0  # LOC:runtime-index
    return y


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_out_of_range_index_known_at_run_time_raises_on_every_backend(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    f = to_static(runtime_index, backend=backend)
    want = X.copy()
    want[1] = 0.0
    np.testing.assert_allclose(f(T(X), T(1, np.int64)).numpy(), want)
    with pytest.raises(IndexError, match="out of bounds") as info:
        f(T(X), T(7, np.int64))  # XLA would drop the write: the call reruns on numpy
    assert f"line {_line_of('runtime-index')}" in str(info.value)


class _BranchCache(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", d2s.to_tensor(np.zeros((3, 2))))
        self.pair = [0.0, 0.0]

    def forward(self, x, i):
        self.pair = [x * 0.0, x * 0.0]
        if x.sum() > 0:
            self.buf[i] = x
            self.pair[0] = x * 2.0
        else:
            self.pair[1] = x * 3.0
        return self.buf.sum() + self.pair[0].sum() + self.pair[1].sum()


def test_attribute_item_assignment_inside_a_tensor_if_matches_eager():
    eager, static = _BranchCache(), _BranchCache()
    fn = to_static(static.forward)
    for k, i in enumerate([0, 2, 1, 2]):
        x = T([k - 1.5, 1.0 * k])
        want = eager(x, T(i, np.int64)).numpy()
        np.testing.assert_allclose(fn(x, T(i, np.int64)).numpy(), want)
        np.testing.assert_allclose(static.buf.numpy(), eager.buf.numpy())


def test_a_tensor_item_assignment_builds_set_item_ops_and_python_values_stay_python():
    """The converted write is a program op where the value is traced (inside
    the tensor `while` too), and plain Python where it is not: a Python
    container written in the same function stays a Python container."""
    x, n = T(X), T(2, np.int64)
    program = to_static(rows_in_tensor_while).get_concrete_program(x, n).main_program
    ops = [op.type for op in program.all_ops()]
    assert "set_item" in ops and "while" in ops
    python_program = to_static(python_containers).get_concrete_program(T(X)).main_program
    assert "set_item" not in {op.type for op in python_program.all_ops()}

    def write_into(xs, i, v):
        xs[i] = v
        return xs

    assert to_static(write_into)([1, 2, 3], 1, 9) == [1, 9, 3]  # no tensor: Python's list
