"""Indexing (`x[...]`) against numpy: eager values and gradients, static runs,
and the static shape rule `getitem_shape` on many random index combinations."""
from __future__ import annotations

import numpy as np
import pytest

import d2s
from d2s.core.ops.indexing import encode_index, getitem_shape
from d2s.core.registry import Aval
from d2s.static import Executor, Program, data, gradients, program_guard

_X = np.arange(3 * 4 * 5, dtype=np.float64).reshape(3, 4, 5) / 7.0 - 4.0
_MASK = np.array([[True, False, True, True], [False, False, True, False],
                  [True, True, False, False]])


def T(a):
    """An eager index tensor."""
    return d2s.to_tensor(np.asarray(a))


# (label, index for d2s, the same index for numpy)
INDEXES = [
    ("int", 1, 1),
    ("neg_int", -1, -1),
    ("slice", slice(1, 3), slice(1, 3)),
    ("neg_step", slice(None, None, -1), slice(None, None, -1)),
    ("neg_step_bounds", (slice(2, 0, -1), slice(-1, None, -2)),
     (slice(2, 0, -1), slice(-1, None, -2))),
    ("oob_slice", (slice(-10, 10), slice(7, 9)), (slice(-10, 10), slice(7, 9))),
    ("none", (None, 0, None), (None, 0, None)),
    ("ellipsis", (Ellipsis, 2), (Ellipsis, 2)),
    ("ellipsis_mid", (0, Ellipsis, slice(None, None, 2)), (0, Ellipsis, slice(None, None, 2))),
    ("int_tensor", T([2, 0, 2]), np.array([2, 0, 2])),
    ("int_tensor_2d", (slice(None), T([[1, 3], [0, 0]])),
     (slice(None), np.array([[1, 3], [0, 0]]))),
    ("two_tensors", (T([0, 2]), T([1, 3])), (np.array([0, 2]), np.array([1, 3]))),
    ("tensors_split", (T([0, 2]), slice(None), T([4, 1])),
     (np.array([0, 2]), slice(None), np.array([4, 1]))),
    ("int_and_tensor_split", (1, slice(None), T([4, 1, 4])), (1, slice(None), np.array([4, 1, 4]))),
    ("bool_tensor", T(_MASK), _MASK),
    ("bool_tensor_last", (Ellipsis, T(np.array([True, False, False, True, True]))),
     (Ellipsis, np.array([True, False, False, True, True]))),
    ("0d_int_tensor", (T(2), slice(1, None)), (2, slice(1, None))),
    ("0d_tensor_bounds", (slice(T(1), T(3)), slice(None, T(-1)), slice(None, None, T(-2))),
     (slice(1, 3), slice(None, -1), slice(None, None, -2))),
    ("list_index", [0, 0, 2], np.array([0, 0, 2])),
]


@pytest.mark.parametrize("label,index,np_index", INDEXES, ids=[i[0] for i in INDEXES])
def test_getitem_eager_value_and_grad(label, index, np_index):
    x = d2s.to_tensor(_X, stop_gradient=False)
    y = x[index]
    want = _X[np_index]
    assert y.shape == want.shape and y.dtype == want.dtype
    np.testing.assert_array_equal(y.numpy(), want)
    r = np.random.default_rng(0).standard_normal(want.shape)
    (y * d2s.to_tensor(r)).sum().backward()
    expected = np.zeros_like(_X)
    np.add.at(expected, np_index, r)  # the gradient of indexing scatters (duplicates add)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("first_dim", [3, None], ids=["concrete", "none_dim"])
@pytest.mark.parametrize("label,index,np_index", INDEXES, ids=[i[0] for i in INDEXES])
def test_getitem_static_value_and_grad(label, index, np_index, first_dim):
    want = _X[np_index]
    prog = Program()
    with program_guard(prog):
        x = data("x", (first_dim, 4, 5), "float64")
        y = x[index]
        assert len(y.shape) == want.ndim
        assert all(d is None or d == w for d, w in zip(y.shape, want.shape)), (y.shape, want.shape)
        r = np.random.default_rng(0).standard_normal(want.shape)
        (gx,) = gradients([(y * d2s.to_tensor(r)).sum()], [x])
    got, g = Executor().run(prog, feed={"x": _X}, fetch_list=[y, gx])
    np.testing.assert_array_equal(got, want)
    expected = np.zeros_like(_X)
    np.add.at(expected, np_index, r)
    np.testing.assert_allclose(g, expected, rtol=1e-12)


def test_getitem_with_static_index_variable():
    prog = Program()
    with program_guard(prog):
        x = data("x", (3, 4, 5), "float64")
        i = data("i", (), "int64")
        idx = data("idx", (None,), "int64")
        a, b = x[i], x[:, idx, i]
        assert a.shape == (4, 5) and b.shape == (3, None)
        c = x[i:, :i]
        assert c.shape == (None, None, 5)
    got = Executor().run(prog, feed={"x": _X, "i": np.array(2), "idx": np.array([3, 1])},
                         fetch_list=[a, b, c])
    np.testing.assert_array_equal(got[0], _X[2])
    np.testing.assert_array_equal(got[1], _X[:, [3, 1], 2])
    np.testing.assert_array_equal(got[2], _X[2:, :2])


@pytest.mark.parametrize("index", [(0, 0, 0, 0), (Ellipsis, Ellipsis), (5,), (0, -5),
                                   (T([0.5]),), (T(1.0),), (T(np.ones((3, 3), bool)),)],
                         ids=["too_many", "two_ellipses", "oob", "oob_neg", "float_tensor",
                              "float_0d", "bool_shape"])
def test_getitem_bad_index_raises_index_error(index):
    x = d2s.to_tensor(_X)
    with pytest.raises(IndexError):
        x[index]
    prog = Program()
    with program_guard(prog):
        v = data("x", (3, 4, 5), "float64")
        with pytest.raises(IndexError):
            v[index]


def test_python_bool_index_is_rejected():
    with pytest.raises(TypeError):
        d2s.to_tensor(_X)[True]


# ---- the shape rule against numpy on random index combinations ----------------------------------
def _random_index(rng, shape):
    """A random numpy index for `shape` and the list of its array parts."""
    ndim = len(shape)
    items, dim = [], 0
    ellipsis_used = False
    while True:
        choice = rng.choice(["int", "slice", "none", "ellipsis", "iarr", "barr", "i0d", "stop"],
                            p=[.17, .25, .1, .08, .15, .07, .06, .12])
        if choice == "stop" or dim >= ndim and choice not in ("none", "ellipsis"):
            break
        if choice == "int":
            items.append(int(rng.integers(-shape[dim], shape[dim])))
            dim += 1
        elif choice == "slice":
            def bound():
                return None if rng.random() < 0.3 else int(rng.integers(-7, 8))
            step = None if rng.random() < 0.4 else int(rng.choice([-3, -2, -1, 1, 2, 3]))
            items.append(slice(bound(), bound(), step))
            dim += 1
        elif choice == "none":
            items.append(None)
        elif choice == "ellipsis":
            if ellipsis_used:
                continue
            ellipsis_used = True
            items.append(Ellipsis)
        elif choice == "iarr":
            ishape = tuple(int(d) for d in rng.choice([1, 2, 3], size=rng.integers(0, 3)))
            if rng.random() < 0.3:
                ishape = (2,)  # a shape every other array broadcasts against more often
            items.append(np.zeros(ishape, np.int64))  # values are run-time: keep in bounds
            dim += 1
        elif choice == "i0d":
            items.append(np.array(0))
            dim += 1
        else:
            k = int(min(rng.integers(0, 3), ndim - dim))
            items.append(np.asarray(rng.random(shape[dim:dim + k]) < 0.5))
            dim += k
    return tuple(items)


def _spec(index):
    spec, tensors, avals = [], [], []
    for it in index:
        if isinstance(it, np.ndarray):
            spec.append(("tensor", len(avals)))
            avals.append(Aval(it.shape, it.dtype))
        elif isinstance(it, slice):
            spec.append(("slice", it.start, it.stop, it.step))
        elif it is None:
            spec.append(("none",))
        elif it is Ellipsis:
            spec.append(("ellipsis",))
        else:
            spec.append(("int", it))
    return tuple(spec), avals


def test_encode_index_matches_spec_builder():
    index = (1, slice(None, 2, -1), None, Ellipsis, np.array([0, 1]))
    spec, tensors = encode_index(index)
    assert spec == _spec(index)[0]
    assert len(tensors) == 1


def test_getitem_shape_matches_numpy_on_random_indexes():
    rng = np.random.default_rng(1234)
    checked = raised = 0
    for _ in range(3000):
        shape = tuple(int(d) for d in rng.integers(1, 6, size=rng.integers(0, 5)))
        index = _random_index(rng, shape)
        spec, avals = _spec(index)
        has_bool = any(isinstance(it, np.ndarray) and it.dtype == bool for it in index)
        try:
            want = np.empty(shape)[index].shape
        except IndexError:
            # A mask's count of True entries is a run-time value: the rule cannot
            # know that it fails to broadcast with the other index arrays.
            if not has_bool:
                raised += 1
                with pytest.raises((IndexError, ValueError)):
                    getitem_shape(shape, spec, avals)
            continue
        got = getitem_shape(shape, spec, avals)
        if has_bool:  # the number of True entries is a run-time value
            assert len(got) == len(want) and all(
                g is None or g == w for g, w in zip(got, want)), (shape, index, got, want)
        else:
            assert got == want, (shape, index, got, want)
        checked += 1

        # Unknown dims (static `None`) must give a compatible shape, never an error.
        unknown = tuple(None if rng.random() < 0.4 else d for d in shape)
        got_none = getitem_shape(unknown, spec, avals)
        assert len(got_none) == len(want) and all(
            g is None or g == w for g, w in zip(got_none, want)), (unknown, index, got_none, want)
    assert checked > 2000 and raised > 5
