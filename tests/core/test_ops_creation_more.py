"""Creation ops and dtype names (d2s/core/ops/creation_more.py,
d2s/core/dtype_names.py): linspace, eye, empty, empty_like, assign, clone,
one_hot; d2s.float32 & co., finfo, get/set_default_dtype, is_tensor;
Tensor.tolist."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(8)

CASES = [
    ("linspace", lambda x: x + d2s.linspace(0, 1, 5), [R.standard_normal(5)],
     lambda x: x + np.linspace(0, 1, 5).astype(np.float32)),
    ("linspace_dtype_desc", lambda x: x * d2s.linspace(3, -1, 4, dtype="float64"),
     [R.standard_normal(4)], lambda x: x * np.linspace(3, -1, 4)),
    ("eye", lambda x: x @ d2s.eye(3, dtype="float64"), [R.standard_normal((2, 3))],
     lambda x: x @ np.eye(3)),
    ("eye_rect_int", lambda x: x + d2s.eye(2, 3, dtype="int64"), [np.ones((2, 3), np.int64)],
     lambda x: x + np.eye(2, 3, dtype=np.int64)),
    ("assign", lambda x: d2s.assign(x) * 2, [R.standard_normal(3)], lambda x: x * 2),
    ("assign_array", lambda x: x + d2s.assign(np.arange(3.0)), [R.standard_normal(3)],
     lambda x: x + np.arange(3.0)),
    ("clone", lambda x: x.clone() * x, [R.standard_normal(3)], lambda x: x * x),
    ("one_hot", lambda i: d2s.one_hot(i, 4), [np.array([[0, 3], [2, 2]])],
     lambda i: np.eye(4, dtype=np.float32)[i]),
    ("empty_like_shape", lambda x: d2s.empty_like(x) * 0 + 1, [R.standard_normal((2, 3))],
     lambda x: np.ones((2, 3))),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_creation_op(case):
    name, fn, arrays, ref = case
    check(fn, arrays, ref)


@pytest.mark.parametrize("bad", [3, -1])
def test_one_hot_out_of_range_raises_in_a_program_too(bad):
    prog = d2s.static.Program()
    with d2s.static.program_guard(prog):
        i = d2s.static.data("i", [None], "int64")
        out = d2s.one_hot(i, 3)
    with pytest.raises(IndexError):
        d2s.static.Executor().run(prog, feed={"i": np.array([0, bad])}, fetch_list=[out])


def test_creation_values_and_dtypes():
    assert d2s.linspace(0, 1, 5).dtype == np.float32
    np.testing.assert_array_equal(d2s.linspace(0, 1, 0).numpy(), np.zeros(0, np.float32))
    assert d2s.eye(2).dtype == np.float32 and d2s.eye(2).shape == (2, 2)
    e = d2s.empty([2, 3], dtype="int32")
    assert e.shape == (2, 3) and e.dtype == np.int32
    assert d2s.assign([1.0, 2.0]).dtype == np.float32  # Python floats: float32
    assert d2s.assign(np.array([1, 2])).dtype == np.int64
    assert d2s.to_tensor(np.arange(4).reshape(2, 2)).tolist() == [[0, 1], [2, 3]]
    assert d2s.to_tensor(1.5).tolist() == 1.5


def test_creation_bad_input():
    with pytest.raises(ValueError, match="num must be a non-negative int"):
        d2s.linspace(0, 1, -1)
    with pytest.raises(IndexError, match=r"values must be in \[0, 3\)"):
        d2s.one_hot(d2s.to_tensor(np.array([0, 3])), 3)
    with pytest.raises(TypeError, match="integer tensor"):
        d2s.one_hot(d2s.to_tensor(np.array([0.0])), 3)
    with pytest.raises(ValueError, match="in-place write must keep the tensor's shape"):
        d2s.assign(d2s.ones([2]), output=d2s.to_tensor(2.0))
    out = d2s.to_tensor(2.0)      # assign(x, output=) writes in place (tests/corpus too)
    assert d2s.assign(d2s.to_tensor(1.0), output=out) is out and float(out) == 1.0


def test_dtype_names_are_numpy_dtypes_every_op_accepts():
    assert d2s.float32 == np.float32 and d2s.int64 == np.int64 and d2s.bool == np.bool_
    assert d2s.float16 == np.float16 and d2s.int16 == np.int16 and d2s.dtype("int32") == np.int32
    x = d2s.to_tensor(np.arange(3)).astype(d2s.float32)
    assert x.dtype == d2s.float32
    assert d2s.cast(x, d2s.bool).dtype == np.bool_
    assert d2s.finfo(d2s.float32).eps == np.finfo(np.float32).eps
    assert d2s.iinfo(d2s.int64).max == np.iinfo(np.int64).max
    assert d2s.get_default_dtype() == "float32"
    d2s.set_default_dtype("float32")
    with pytest.raises(NotImplementedError, match="float32"):
        d2s.set_default_dtype("float64")
    assert d2s.is_tensor(x) and not d2s.is_tensor(np.zeros(2))
    if d2s.bfloat16 is not None:
        b = d2s.to_tensor(np.array([1.5, 2.0], np.float32)).astype(d2s.bfloat16)
        assert b.dtype == d2s.bfloat16
        np.testing.assert_array_equal(b.astype("float32").numpy(), [1.5, 2.0])


def test_host_placement_methods_are_identities():
    x = d2s.to_tensor(np.arange(3))
    assert x.cpu() is x and x.cuda() is x and x.contiguous() is x
    assert x.is_contiguous() and x.place == "Place(cpu)"
    assert d2s.tolist(x) == [0, 1, 2]
