"""Item assignment: the functional `set_item` op (values vs numpy, gradients
of x and v vs finite differences, to_static on numpy and xla, Executor with
unknown dims, ONNX Runtime) and eager `x[i] = v` / `set_value`, which rebind
the Tensor (version bumps, PyTorch's leaf and "modified by an inplace
operation" errors)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import d2s
from d2s.static.backend import BackendFallbackWarning
from tests.core.ops_check import check

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4))


def _ref(index, value_shape):
    def ref(x, v, *idx):
        out = x.copy()
        out[index(*idx) if callable(index) else index] = v
        return out
    return ref


# (name, index (or a function of the index tensors), value shape, index arrays)
CASES = [
    ("int", 1, (4,), ()),
    ("negative int", -1, (), ()),
    ("slice", (slice(None), slice(1, 3)), (3, 2), ()),
    ("strided slice", (slice(None, None, 2), 0), (2,), ()),
    ("broadcast row", (slice(0, 2),), (4,), ()),
    ("leading size-1 dims", (0, slice(None)), (1, 4), ()),
    ("None", (None, 1), (1, 4), ()),
    ("ellipsis", (Ellipsis, 2), (3,), ()),
    ("int tensor", lambda i: i, (2, 4), (np.array([2, 0]),)),
    ("int tensor and slice", lambda i: (slice(None), i), (3, 2), (np.array([3, 1]),)),
    ("0-d int tensor", lambda i: (i, slice(1, None)), (3,), (np.array(2),)),
]


@pytest.mark.parametrize("name, index, vshape, idx", CASES, ids=[c[0] for c in CASES])
def test_set_item_matches_numpy_with_gradients_and_every_backend(name, index, vshape, idx):
    v = rng.standard_normal(vshape)

    def fn(x, v, *ts):
        return d2s.set_item(x, index(*ts) if callable(index) else index, v)
    check(fn, [X, v, *idx], _ref(index, vshape))


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("mask, value", [
    (X > 0, 0.0),                                  # x[x > 0] = 0
    (X[:, 0] > 0, np.arange(4.0)),                 # one row value for each true row
])
def test_bool_mask_index_eager_and_static(mask, value, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    x = d2s.to_tensor(X)
    want = X.copy()
    want[mask] = value
    got = d2s.set_item(x, d2s.to_tensor(mask), d2s.to_tensor(value))
    np.testing.assert_array_equal(got.numpy(), want)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)  # a `where` on xla
        sf = d2s.jit.to_static(lambda x, m, v: d2s.set_item(x, m, v), backend=backend)
        np.testing.assert_array_equal(sf(x, d2s.to_tensor(mask), d2s.to_tensor(value)).numpy(),
                                      want)


def test_eager_setitem_rebinds_and_gradients_flow_to_old_x_and_v():
    w = d2s.to_tensor(X, stop_gradient=False)
    v = d2s.to_tensor(rng.standard_normal(2), stop_gradient=False)
    y = w * 3.0
    before = y.inplace_version
    y[1, 1:3] = v
    assert y.inplace_version == before + 1
    r = rng.standard_normal(X.shape)
    (y * d2s.to_tensor(r)).sum().backward()
    gw = 3.0 * r
    gw[1, 1:3] = 0.0
    np.testing.assert_allclose(w.grad.numpy(), gw)
    np.testing.assert_allclose(v.grad.numpy(), r[1, 1:3])
    want = 3.0 * X
    want[1, 1:3] = v.numpy()
    np.testing.assert_allclose(y.numpy(), want)


def test_eager_setitem_keeps_dtype_and_never_writes_the_old_array():
    t = d2s.to_tensor(np.arange(5))
    old = t.numpy()
    t[1:3] = 9.7  # cast to int64, as Paddle does
    assert t.dtype == np.int64
    np.testing.assert_array_equal(t.numpy(), [0, 9, 9, 3, 4])
    np.testing.assert_array_equal(old, np.arange(5))


def test_in_place_on_a_leaf_that_requires_grad_raises_unless_no_grad():
    w = d2s.to_tensor(X, stop_gradient=False)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation"):
        w[0] = 1.0
    with d2s.no_grad():
        w[0] = 1.0
    assert w.is_leaf and not w.stop_gradient and w.numpy()[0, 0] == 1.0


def test_modifying_a_value_saved_for_backward_raises_at_backward():
    w = d2s.to_tensor(X, stop_gradient=False)
    h = w * 2.0
    out = (h * h).sum()
    h[0] = 0.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_set_value_replaces_values_and_checks_the_shape():
    p = d2s.to_tensor(np.zeros((2, 2), np.float32), stop_gradient=False)
    p.set_value(np.ones((2, 2)))
    assert p.dtype == np.float32 and p.inplace_version == 1
    np.testing.assert_array_equal(p.numpy(), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"shape \[3\]"):
        p.set_value(np.ones(3))


def test_eager_matches_torch_for_a_chain_of_writes():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((4, 3))
    b = rng.standard_normal(3)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ty = ta * 2.0 + 1.0
    ty[torch.tensor([0, 2])] = tb
    ty[..., 1] = ty[..., 1] * 2.0
    (ty ** 2).sum().backward()
    da, db = d2s.to_tensor(a, stop_gradient=False), d2s.to_tensor(b, stop_gradient=False)
    dy = da * 2.0 + 1.0
    dy[d2s.to_tensor([0, 2])] = db
    dy[..., 1] = dy[..., 1] * 2.0
    (dy ** 2).sum().backward()
    np.testing.assert_allclose(dy.numpy(), ty.detach().numpy())
    np.testing.assert_allclose(da.grad.numpy(), ta.grad.numpy())
    np.testing.assert_allclose(db.grad.numpy(), tb.grad.numpy())


@pytest.mark.parametrize("index, value, error, match", [
    ((0, slice(None)), np.ones(3), ValueError, r"shape \(3,\) does not broadcast into .*\(4,\)"),
    (5, 1.0, IndexError, "out of bounds"),
    (np.array([0.5]), 1.0, IndexError, "integer"),
])
def test_bad_item_assignment_is_a_clear_error(index, value, error, match):
    t = d2s.to_tensor(X)
    with pytest.raises(error, match=match):
        t[index] = value
    np.testing.assert_array_equal(t.numpy(), X)  # unchanged
    assert t.inplace_version == 0
