"""cumsum / cumprod (d2s/core/ops/scan.py) through the public functions:
axis None (flattened), negative axes, dtype=, 0-d and empty inputs, int and
bool dtypes (NumPy 2's int64 results), gradients, numpy+xla static, unknown
dims, ONNX Runtime (cumprod has no ONNX form: the export says why)."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(5)


def f64(*s):
    return R.uniform(0.5, 1.5, size=s) * R.choice([-1.0, 1.0], size=s)


CASES = [
    ("cumsum_axis", lambda x: d2s.cumsum(x, axis=-1), [f64(3, 4)], lambda x: np.cumsum(x, -1)),
    ("cumsum_flat", lambda x: d2s.cumsum(x), [f64(2, 3)], lambda x: np.cumsum(x)),
    ("cumsum_dtype", lambda x: d2s.cumsum(x, 0, dtype="float64"), [np.arange(6, dtype=np.int32)],
     lambda x: np.cumsum(x.astype(np.float64))),
    ("cumsum_int32", lambda x: x.cumsum(1), [np.arange(6, dtype=np.int32).reshape(2, 3)],
     lambda x: np.cumsum(x, 1)),
    ("cumsum_bool", lambda x: d2s.cumsum(x, 0), [R.random(5) > 0.5], lambda x: np.cumsum(x)),
    ("cumsum_0d_flat", lambda x: d2s.cumsum(x), [np.float64(2.5)], np.cumsum),  # flattened: (1,)
    ("cumsum_0d_axis", lambda x: d2s.cumsum(x, 0), [np.float64(2.5)], lambda x: x),  # stays 0-d
    ("cumsum_empty", lambda x: d2s.cumsum(x, 1), [np.zeros((0, 3))], lambda x: np.zeros((0, 3))),
]
PROD_CASES = [
    ("cumprod_axis", lambda x: d2s.cumprod(x, dim=-2), [f64(3, 4)], lambda x: np.cumprod(x, 0)),
    ("cumprod_flat", lambda x: x.cumprod(), [f64(2, 3)], lambda x: np.cumprod(x)),
    ("cumprod_int", lambda x: d2s.cumprod(x, 0), [np.array([1, -2, 3, 4])], np.cumprod),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cumsum(case):
    name, fn, arrays, ref = case
    check(fn, arrays, ref)


@pytest.mark.parametrize("case", PROD_CASES, ids=[c[0] for c in PROD_CASES])
def test_cumprod(case):
    name, fn, arrays, ref = case
    check(fn, arrays, ref, onnx=False)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # (the nan is the point)
def test_cumprod_gradient_at_a_zero_is_nan_not_wrong():
    x = d2s.to_tensor(np.array([2.0, 0.0, 3.0]), stop_gradient=False)
    d2s.cumprod(x, 0).sum().backward()
    g = x.grad.numpy()
    assert np.isnan(g[1])
    # d/dx0 (x0 + x0 x1 + x0 x1 x2) = 1 + x1 + x1 x2 = 1;  d/dx2 = x0 x1 = 0
    np.testing.assert_allclose(g[[0, 2]], [1.0, 0.0])


def test_cumprod_onnx_export_says_why_not():
    pytest.importorskip("onnx")
    from d2s.onnx.errors import ExportError
    from d2s.onnx.exporter import export_program
    prog = d2s.static.Program()
    with d2s.static.program_guard(prog):
        x = d2s.static.data("x", [3], "float32")
        y = d2s.cumprod(x, 0)
    with pytest.raises(ExportError, match="cumulative product"):
        export_program(prog, prog.global_block().ops, [x], [y])


@pytest.mark.parametrize("call,match", [
    (lambda x: d2s.cumsum(x, 2), "out of range"),
    (lambda x: d2s.cumsum(x, -3), "out of range"),
    (lambda x: d2s.cumprod(x, 1.0), "must be an int"),
])
def test_bad_axis(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call(d2s.to_tensor(f64(2, 3)))
