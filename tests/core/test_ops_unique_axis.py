"""`d2s.unique(x, axis=k)`: the distinct slices along an axis, sorted
lexicographically, with first indices, the 1-D inverse and counts, vs
numpy's `unique(axis=)`: eager, gradients through the kept slices, a
Program with known dims (a sort per column) and with unknown dims (the
pairwise rank path), ONNX, and converted code on numpy and xla."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import d2s
from ops_check import check

INTS = np.array([[1, 2, 1, 2, 0], [3, 0, 3, 1, 0], [1, 2, 1, 2, 0], [1, 0, 1, 2, 0]],
                dtype=np.int64)
CUBE = np.array([[[2, 1], [0, 1]], [[0, 1], [2, 1]], [[2, 1], [0, 1]]], dtype=np.int64)


def _ref(axis, **flags):
    def ref(x):
        outs = np.unique(x, axis=axis, **flags)
        if not isinstance(outs, tuple):
            return outs
        return (outs[0],) + tuple(np.asarray(o, np.int64).reshape(-1) for o in outs[1:])
    return ref


ALL = dict(return_index=True, return_inverse=True, return_counts=True)
CASES = [
    ("rows", INTS, 0, ALL),
    ("columns", INTS, 1, ALL),
    ("last_axis", INTS, -1, dict(return_counts=True)),
    ("cube_axis0", CUBE, 0, ALL),
    ("cube_axis1", CUBE, 1, dict(return_inverse=True)),
    ("cube_axis2", CUBE, 2, dict(return_index=True)),
    ("floats_with_ties", (INTS * 0.5).astype(np.float32), 0, ALL),
]


@pytest.mark.parametrize("name, x, axis, flags", CASES, ids=[c[0] for c in CASES])
def test_unique_along_axis_matches_numpy(name, x, axis, flags):
    check(lambda t: d2s.unique(t, axis=axis, **flags), [x], _ref(axis, **flags), grad=False,
          xla=False)


def test_unique_along_axis_gradient_reaches_the_kept_slices():
    x = np.array([[0.5, 2.0], [-1.0, 3.0], [1.5, -2.0]])   # distinct, no ties
    check(lambda t: d2s.unique(t, axis=0), [x], _ref(0), xla=False, onnx=False)


def test_unique_along_axis_of_empty_and_entryless_slices():
    empty = d2s.unique(d2s.to_tensor(np.zeros((0, 3))), axis=0, return_counts=True)
    assert tuple(empty[0].shape) == (0, 3) and tuple(empty[1].shape) == (0,)
    flat = d2s.unique(d2s.to_tensor(np.zeros((3, 0))), axis=0, return_inverse=True)
    want = np.unique(np.zeros((3, 0)), axis=0, return_inverse=True)
    assert tuple(flat[0].shape) == want[0].shape
    np.testing.assert_array_equal(flat[1].numpy(), np.asarray(want[1]).reshape(-1))
    with pytest.raises(ValueError, match="0-d"):
        d2s.unique(d2s.to_tensor(np.float64(1.0)), axis=0)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_unique_along_axis_converted(backend):
    if backend == "xla":
        pytest.importorskip("jax")

    def f(x):
        return d2s.unique(x, return_index=True, return_inverse=True, return_counts=True,
                          axis=1)
    fn = d2s.jit.to_static(f, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # xla: a data-dependent length runs on numpy
        got = fn(d2s.to_tensor(INTS))
    for g, w in zip(got, _ref(1, **ALL)(INTS)):
        np.testing.assert_array_equal(g.numpy(), w)
