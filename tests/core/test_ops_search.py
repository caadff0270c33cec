"""Sorting and index-driven selection (d2s/core/ops/search.py): each public
function against numpy, with gradients, static programs on numpy and xla,
unknown dims, ONNX Runtime; integer dtypes; bad input."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(27)


def f64(*s):
    return R.standard_normal(s)


def ints(*s, lo=0, hi=4):
    return R.integers(lo, hi, size=s).astype(np.int64)


def _desc(x, axis):  # stable descending, the reference
    return np.argsort(-x, axis=axis, kind="stable")


def _topk_ref(k, axis=-1, largest=True):
    def ref(x):
        idx = _desc(x, axis) if largest else np.argsort(x, axis=axis, kind="stable")
        idx = np.take(idx, np.arange(k), axis=axis)
        return np.take_along_axis(x, idx, axis), idx
    return ref


def _scatter_ref(x, index, updates, overwrite=True):
    out = x.copy()
    if overwrite:
        for i, j in enumerate(index):
            out[j] = updates[i]
    else:
        out[index] = 0
        np.add.at(out, index, updates)
    return out


def _put_ref(arr, idx, values, axis):
    out = arr.copy()
    np.put_along_axis(out, idx, values, axis)
    return out


def _put_add_ref(arr, idx, values, axis):
    out = arr.copy()
    full = (slice(None),) * 0
    ind = list(np.ix_(*[np.arange(d) for d in idx.shape]))
    ind[axis] = idx
    np.add.at(out, tuple(ind), values)
    return out


CASES = [
    ("sort", lambda x: d2s.sort(x), [f64(3, 5)], lambda x: np.sort(x, -1)),
    ("sort_desc_axis0", lambda x: d2s.sort(x, axis=0, descending=True), [f64(4, 3)],
     lambda x: -np.sort(-x, 0)),
    ("sort_int", lambda x: x.sort(), [ints(6)], np.sort),
    ("argsort_neg_axis", lambda x: d2s.argsort(x, axis=-2), [f64(3, 4)],
     lambda x: np.argsort(x, 0, kind="stable")),
    ("topk", lambda x: d2s.topk(x, 2), [f64(3, 5)], _topk_ref(2)),
    ("topk_smallest_axis0", lambda x: d2s.topk(x, 3, axis=0, largest=False), [f64(4, 2)],
     _topk_ref(3, 0, False)),
    ("topk_ties_int", lambda x: x.topk(3), [ints(2, 6)], _topk_ref(3)),
    ("topk_k0", lambda x: d2s.topk(x, 0)[0], [f64(2, 3)], lambda x: np.zeros((2, 0))),
    ("sort_topk_bools", lambda m: (d2s.sort(m), d2s.topk(m, 2)[1]), [R.random((2, 5)) > 0.5],
     lambda m: (np.sort(m, -1), np.argsort(~m, -1, kind="stable")[:, :2])),
    ("sort_0d_empty", lambda x, e: (d2s.sort(x), d2s.sort(e, 0)), [np.float64(3.0), np.zeros((0, 2))],
     lambda x, e: (x, e), dict(onnx=False)),
    ("take_along_axis", lambda x, i: d2s.take_along_axis(x, i, 1), [f64(3, 4), ints(3, 2)],
     lambda x, i: np.take_along_axis(x, i, 1)),
    ("take_along_axis_bcast", lambda x, i: d2s.take_along_axis(x, i, 0),
     [f64(4, 3), ints(2, 1)], lambda x, i: np.take_along_axis(x, np.broadcast_to(i, (2, 3)), 0)),
    ("put_along_axis", lambda x, i, v: d2s.put_along_axis(x, i, v, 1),
     [f64(2, 4), np.array([[3, 0], [1, 2]]), f64(2, 2)], lambda x, i, v: _put_ref(x, i, v, 1)),
    ("put_along_axis_dups_last_wins", lambda x, i, v: d2s.put_along_axis(x, i, v, 1),
     [f64(2, 4), np.array([[1, 1, 3], [0, 2, 0]]), f64(2, 3)],
     lambda x, i, v: _put_ref(x, i, v, 1)),
    ("put_along_axis_add", lambda x, i, v: d2s.put_along_axis(x, i, v, 0, reduce="add"),
     [f64(3, 2), np.array([[2, 0], [2, 2]]), f64(2, 2)],
     lambda x, i, v: _put_add_ref(x, i, v, 0)),
    ("index_select", lambda x, i: d2s.index_select(x, i, axis=-1), [f64(2, 4), ints(5)],
     lambda x, i: x[:, i]),
    ("index_sample", d2s.index_sample, [f64(3, 4), ints(3, 5)],
     lambda x, i: np.take_along_axis(x, i, 1)),
    ("gather_nd", d2s.gather_nd, [f64(3, 4, 2), np.array([[0, 1], [2, 3], [0, 1]])],
     lambda x, i: x[i[:, 0], i[:, 1]], dict(unknown="first")),
    ("gather_nd_full", d2s.gather_nd, [f64(3, 4), np.array([[[2, 1]], [[0, 3]]])],
     lambda x, i: x[i[..., 0], i[..., 1]], dict(unknown="first")),
    ("scatter", d2s.scatter, [f64(4, 2), np.array([1, 3, 1]), f64(3, 2)], _scatter_ref),
    ("scatter_accumulate", lambda x, i, u: d2s.scatter(x, i, u, overwrite=False),
     [f64(4, 2), np.array([1, 3, 1]), f64(3, 2)],
     lambda x, i, u: _scatter_ref(x, i, u, False)),
    ("masked_fill", lambda x, m: d2s.masked_fill(x, m, -1.5), [f64(3, 4), R.random(4) > 0.5],
     lambda x, m: np.where(m, -1.5, x)),
    ("masked_fill_int", lambda x, m: x.masked_fill(m, 7), [ints(3, 2), R.random((3, 2)) > 0.5],
     lambda x, m: np.where(m, 7, x)),
    ("masked_fill_keeps_dtype", lambda x, m, v: (d2s.masked_fill(x, m, 2.5),
                                                 d2s.masked_fill(x, m, v)),
     [ints(3, 2), R.random((3, 2)) > 0.5, np.float64(-1.5)],
     lambda x, m, v: (np.where(m, 2, x), np.where(m, -1, x)), dict(grad=False)),
]


@pytest.mark.filterwarnings("ignore:divide by zero")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_search_op(case):
    name, fn, arrays, ref, *options = case
    check(fn, arrays, ref, **(options[0] if options else {}))


def test_masked_select_is_data_dependent_and_runs_on_numpy():
    x, m = f64(3, 4), R.random((3, 4)) > 0.5
    check(d2s.masked_select, [x, m], lambda x, m: x[m], xla=False, onnx=True)
    # broadcast mask
    m1 = np.array([True, False, False, True])
    got = d2s.masked_select(d2s.to_tensor(x), d2s.to_tensor(m1))
    np.testing.assert_array_equal(got.numpy(), x[np.broadcast_to(m1, x.shape)])
    # xla cannot compile a data-dependent shape: the program runs on numpy, with the warning
    from d2s.static.backend import BackendFallbackWarning
    sf = d2s.jit.to_static(lambda a, b: d2s.masked_select(a, b), backend="xla")
    with pytest.warns(BackendFallbackWarning):
        out = sf(d2s.to_tensor(x), d2s.to_tensor(m))
    np.testing.assert_array_equal(out.numpy(), x[m])


def test_sort_is_stable_and_equal_values_keep_order():
    x = d2s.to_tensor(np.array([2, 1, 2, 1, 2]))
    assert d2s.argsort(x).numpy().tolist() == [1, 3, 0, 2, 4]
    assert d2s.argsort(x, descending=True).numpy().tolist() == [0, 2, 4, 1, 3]


@pytest.mark.parametrize("call,error,match", [
    (lambda: d2s.topk(d2s.to_tensor(f64(2, 3)), 4), ValueError, r"k=4 is larger than the size 3"),
    (lambda: d2s.topk(d2s.to_tensor(f64(2, 3)), 1, axis=2), ValueError, "out of range"),
    (lambda: d2s.sort(d2s.to_tensor(f64(3)), axis=1), ValueError, "out of range"),
    (lambda: d2s.take_along_axis(d2s.to_tensor(f64(2, 3)), d2s.to_tensor(ints(2)), 1),
     ValueError, "same rank"),
    (lambda: d2s.index_select(d2s.to_tensor(f64(2, 3)), d2s.to_tensor(f64(2))), TypeError,
     "integer tensor"),
    (lambda: d2s.gather_nd(d2s.to_tensor(f64(2, 3)), d2s.to_tensor(ints(2, 3))), ValueError,
     "addresses 3 dims"),
    (lambda: d2s.put_along_axis(d2s.to_tensor(f64(2, 3)), d2s.to_tensor(ints(2, 1)), 1.0, 1,
                                reduce="mul"), ValueError, "not supported"),
    (lambda: d2s.index_select(d2s.to_tensor(f64(3)), d2s.to_tensor(np.array([5]))),
     IndexError, "out of bounds"),
])
def test_bad_input_raises(call, error, match):
    with pytest.raises(error, match=match):
        call()
