"""amax ... trace (d2s/core/ops/reduce_scan_more.py, issue 25): values vs
numpy or PyTorch (mode, kthvalue, cummax/cummin, logcumsumexp), gradients
by finite differences, to_static on numpy and xla, unknown dims, ONNX
Runtime."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(27)


def f64(*s):
    return R.permutation(np.arange(int(np.prod(s)))).reshape(s) * 0.37 - 1.1 \
        + R.uniform(0, 0.01, size=s)  # distinct values: order statistics have one gradient


def _torch():
    return pytest.importorskip("torch")


def _t(fn):
    """A reference through PyTorch: numpy in, numpy out (tuples kept)."""
    def ref(*arrays):
        torch = _torch()
        out = fn(torch, *[torch.from_numpy(np.asarray(a)) for a in arrays])
        if isinstance(out, tuple):
            return tuple(o.numpy() for o in out)
        return out.numpy()
    return ref


def _logcumsumexp(x, axis):
    return np.logaddexp.accumulate(x, axis=axis)


def _median_avg(x, axis=None, keepdims=False):
    return np.median(x, axis=axis, keepdims=keepdims)


CASES = [
    ("amax_amin", lambda x: (d2s.amax(x, 1), x.amin(0, keepdim=True), d2s.amax(x)), [f64(3, 4)],
     lambda x: (np.max(x, 1), np.min(x, 0, keepdims=True), np.max(x)), {}),
    ("amax_ties_share", lambda x: d2s.amax(x * 0.0 + 2.0, 1), [f64(2, 3)],
     lambda x: np.max(x * 0.0 + 2.0, 1), {}),
    ("nanmean", lambda x: (d2s.nanmean(x, 1), x.nanmean()),
     [np.array([[1.0, np.nan, 3.0], [np.nan, 5.0, 0.5]])],
     lambda x: (np.nanmean(x, 1), np.nanmean(x)), {"grad": False}),
    ("nanmean_grad", lambda x: d2s.nanmean(x, 0), [f64(3, 2)], lambda x: np.nanmean(x, 0), {}),
    ("count_nonzero", lambda x: (d2s.count_nonzero(x, 1), x.count_nonzero()),
     [np.array([[0, 1, 2], [0, 0, 3]])],
     lambda x: (np.count_nonzero(x, 1).astype(np.int64), np.int64(np.count_nonzero(x))), {}),
    ("median_avg", lambda x: (d2s.median(x), d2s.median(x, 1), x.median(0, keepdim=True)),
     [f64(3, 4)],
     lambda x: (_median_avg(x), _median_avg(x, 1), _median_avg(x, 0, True)),
     {"unknown_dims": False}),
    ("median_int_float32", lambda x: d2s.median(x, 0), [np.array([[1, 4], [2, 8], [7, 0]])],
     lambda x: np.median(x, 0).astype(np.float32), {"unknown_dims": False}),
    ("median_min", lambda x: d2s.median(x, 1, mode="min"), [f64(3, 4)],
     _t(lambda torch, x: tuple(torch.median(x, 1))), {"unknown": "first"}),
    ("quantile", lambda x: (d2s.quantile(x, 0.3), d2s.quantile(x, [0.25, 0.5], 1),
                            x.quantile(0.6, [0, 1], keepdim=True)),
     [f64(3, 4)],
     lambda x: (np.quantile(x, 0.3), np.quantile(x, [0.25, 0.5], 1),
                np.quantile(x, 0.6, (0, 1), keepdims=True)), {"unknown_dims": False}),
    ("quantile_modes", lambda x: tuple(d2s.quantile(x, 0.4, 1, interpolation=m)
                                       for m in ("lower", "higher", "nearest", "midpoint")),
     [f64(2, 5)],
     lambda x: tuple(np.quantile(x, 0.4, 1, method=m)
                     for m in ("lower", "higher", "nearest", "midpoint")),
     {"unknown": "first"}),
    ("kthvalue", lambda x: d2s.kthvalue(x, 2, 1), [f64(3, 4)],
     _t(lambda torch, x: tuple(torch.kthvalue(x, 2, 1))), {"unknown": "first"}),
    ("kthvalue_keepdim", lambda x: x.kthvalue(3, keepdim=True), [f64(2, 4)],
     _t(lambda torch, x: tuple(torch.kthvalue(x, 3, -1, keepdim=True))), {"unknown": "first"}),
    ("mode", lambda x: d2s.mode(x), [np.array([[1, 3, 3, 0, 3], [2, 2, 5, 5, 1]])],
     lambda x: (np.array([3, 2]), np.array([4, 1])), {"unknown": "first"}),
    ("logcumsumexp", lambda x: (d2s.logcumsumexp(x, 1), x.logcumsumexp()),
     [np.array([[-1000.0, 0.0, 3.0], [2.0, 1.0, 700.0]])],
     lambda x: (_logcumsumexp(x, 1), _logcumsumexp(x.ravel(), 0)), {"onnx": False}),
    ("logcumsumexp_grad", lambda x: d2s.logcumsumexp(x, 0), [f64(4, 2)],
     lambda x: _logcumsumexp(x, 0), {"onnx": False}),
    ("cummax_cummin", lambda x: d2s.cummax(x, 1) + x.cummin(0), [f64(3, 4)],
     _t(lambda torch, x: tuple(torch.cummax(x, 1)) + tuple(torch.cummin(x, 0))),
     {"onnx": False}),
    ("cummax_ties_int", lambda x: d2s.cummax(x, dtype="int32"),
     [np.array([1, 3, 3, 2, 5, 5], np.int32)],
     lambda x: (np.maximum.accumulate(x), np.array([0, 1, 2, 2, 4, 5], np.int32)),
     {"onnx": False}),  # (torch's indices)
    ("trace", lambda x: (d2s.trace(x), x.trace(1), d2s.trace(x, -1, 1, 2)), [f64(3, 3, 4)],
     lambda x: (np.trace(x), np.trace(x, 1), np.trace(x, -1, 1, 2)), {}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_reduce_scan_more_op(case):
    name, fn, arrays, ref, opts = case
    check(fn, arrays, ref, **opts)


def test_median_propagates_nan_and_checks_mode():
    x = d2s.to_tensor(np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 2.0]]))
    np.testing.assert_array_equal(d2s.median(x, 1).numpy(), [np.nan, 2.0])
    with pytest.raises(ValueError, match="mode"):
        d2s.median(x, mode="mean")


def test_kthvalue_k_out_of_range():
    with pytest.raises(ValueError, match="k must be in"):
        d2s.kthvalue(d2s.to_tensor(np.ones((2, 3))), 4)


def test_scans_onnx_export_says_why_not():
    from d2s import static
    from d2s.onnx.exporter import export_program
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [2, 3], "float64")
        y = d2s.cummax(x, 1)[0]
    with pytest.raises(Exception, match="cum"):
        export_program(prog, prog.global_block().ops, [x], [y])
