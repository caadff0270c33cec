"""Paddle functions made of other ops (core.ops.compositions) and Paddle's
functions as Tensor methods (d2s.tensor_methods): each against numpy (or
PyTorch), with finite-difference gradients, eager and converted on the
numpy and xla backends, and ONNX where the shared checker exports."""
from __future__ import annotations

import numpy as np
import pytest

import d2s
from ops_check import check

rng = np.random.default_rng(11)
A = rng.standard_normal((3, 4))
B = rng.standard_normal((3, 4))
V = rng.standard_normal(4)
M = rng.standard_normal((4, 5))
SQ = rng.standard_normal((2, 3, 3))
POS = rng.uniform(1.1, 3.0, (3, 4))
UNIT = rng.uniform(-0.9, 0.9, (3, 4))


def _isclose_inputs():
    a = np.array([1.0, np.inf, -np.inf, np.nan, 1.0, 2.0])
    b = np.array([1.0 + 1e-9, np.inf, np.inf, np.nan, 1.1, 2.0])
    return a, b


CASES = [
    # name, d2s function, numpy reference, inputs, whether differentiated (every
    # float64 input then is, against finite differences of the reference)
    ("dot_1d", lambda x, y: d2s.dot(x, y), lambda x, y: np.dot(x, y), (V, V + 1), (0, 1)),
    ("dot_rows", lambda x, y: d2s.dot(x, y), lambda x, y: (x * y).sum(-1), (A, B), (0, 1)),
    ("mv", lambda x, v: d2s.mv(x, v), lambda x, v: x @ v, (A, V), (0, 1)),
    ("addmm", lambda i, x, y: d2s.addmm(i, x, y, beta=0.5, alpha=2.0),
     lambda i, x, y: 0.5 * i + 2.0 * (x @ y), (rng.standard_normal((3, 5)), A, M), (0, 1, 2)),
    ("diagonal", lambda x: d2s.diagonal(x), lambda x: np.diagonal(x).copy(), (A,), (0,)),
    ("diagonal_offset", lambda x: d2s.diagonal(x, 1), lambda x: np.diagonal(x, 1).copy(),
     (A,), (0,)),
    ("diagonal_below", lambda x: d2s.diagonal(x, -1, 1, 2),
     lambda x: np.diagonal(x, -1, 1, 2).copy(), (SQ,), (0,)),
    ("diagonal_method", lambda x: x.diagonal(0, 0, 2), lambda x: np.diagonal(x, 0, 0, 2).copy(),
     (SQ,), (0,)),
    ("asinh", d2s.asinh, np.arcsinh, (A * 3,), (0,)),
    ("acosh", d2s.acosh, np.arccosh, (POS,), (0,)),
    ("atanh", d2s.atanh, np.arctanh, (UNIT,), (0,)),
    ("rad2deg", d2s.rad2deg, np.rad2deg, (A,), (0,)),
    ("deg2rad", d2s.deg2rad, np.deg2rad, (A,), (0,)),
    ("stanh", lambda x: d2s.stanh(x, 0.5, 2.0), lambda x: 2.0 * np.tanh(0.5 * x), (A,), (0,)),
    ("mod", lambda x, y: d2s.mod(x, y), np.mod, (A * 5, POS), ()),
    ("fmax", d2s.fmax, np.fmax, (np.where(A > 1, np.nan, A), np.where(B > 1, np.nan, B)), ()),
    ("fmin", d2s.fmin, np.fmin, (np.where(A > 1, np.nan, A), np.where(B > 1, np.nan, B)), ()),
    ("nansum", lambda x: d2s.nansum(x, axis=1), lambda x: np.nansum(x, axis=1),
     (np.where(A > 1, np.nan, A),), ()),
    ("diff", lambda x: d2s.diff(x), lambda x: np.diff(x), (A,), (0,)),
    ("diff_n2_axis0", lambda x: d2s.diff(x, n=2, axis=0), lambda x: np.diff(x, 2, axis=0),
     (A,), (0,)),
    ("diff_prepend", lambda x, p: d2s.diff(x, axis=1, prepend=p),
     lambda x, p: np.diff(x, axis=1, prepend=p), (A, B[:, :1]), (0, 1)),
    ("trapezoid", lambda y: d2s.trapezoid(y, dx=0.5),
     lambda y: (0.5 * (y[:, 1:] + y[:, :-1]) * 0.5).sum(-1), (A,), (0,)),
    ("trapezoid_x", lambda y, x: d2s.trapezoid(y, x),
     lambda y, x: (0.5 * (y[:, 1:] + y[:, :-1]) * np.diff(x)).sum(-1), (A, np.cumsum(POS[0])),
     (0, 1)),
    ("cumulative_trapezoid", lambda y: d2s.cumulative_trapezoid(y, axis=0),
     lambda y: np.cumsum(0.5 * (y[1:] + y[:-1]), axis=0), (A,), (0,)),
    ("take", lambda x, i: d2s.take(x, i), lambda x, i: x.reshape(-1)[i],
     (A, np.array([[0, 11], [-1, 5]])), (0,)),
    ("take_wrap", lambda x, i: d2s.take(x, i, mode="wrap"),
     lambda x, i: np.take(x, i, mode="wrap"), (A, np.array([13, -14, 2])), (0,)),
    ("take_clip", lambda x, i: d2s.take(x, i, mode="clip"),
     lambda x, i: np.take(x, i, mode="clip"), (A, np.array([13, -3, 2])), (0,)),
    ("isclose", lambda a, b: d2s.isclose(a, b), lambda a, b: np.isclose(a, b),
     _isclose_inputs(), ()),
    ("isclose_nan", lambda a, b: d2s.isclose(a, b, equal_nan=True),
     lambda a, b: np.isclose(a, b, equal_nan=True), _isclose_inputs(), ()),
    ("allclose", lambda a, b: d2s.allclose(a, b, rtol=0.1),
     lambda a, b: np.array(np.allclose(a, b, rtol=0.1)), (A, A * 1.01), ()),
    ("equal_all", d2s.equal_all, lambda a, b: np.array(np.array_equal(a, b)), (A, A.copy()),
     ()),
    ("reverse", lambda x: d2s.reverse(x, [0, 1]), lambda x: x[::-1, ::-1].copy(), (A,), (0,)),
]


# the two dims a diagonal spans must be known while the program is built
_KNOWN_DIMS = {"diagonal", "diagonal_offset", "diagonal_below", "diagonal_method"}


@pytest.mark.parametrize("name,fn,ref,inputs,wrt", CASES, ids=[c[0] for c in CASES])
def test_composition(name, fn, ref, inputs, wrt):
    check(fn, inputs, ref, grad=bool(wrt), unknown_dims=name not in _KNOWN_DIMS)


def test_unique_and_its_indices_match_numpy():
    x = np.array([[3, 1, 2, 1], [2, 5, 3, 3]], dtype=np.int64)
    got = d2s.unique(d2s.to_tensor(x), return_index=True, return_inverse=True,
                     return_counts=True)
    want = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), np.asarray(w).reshape(g.shape))
    assert tuple(got[2].shape) == x.shape   # the inverse has x's shape (Paddle, PyTorch)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_unique_converted(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    x = np.array([4.0, 1.0, 4.0, 2.0, 1.0, 4.0])
    fn = d2s.jit.to_static(_unique_all, backend=backend)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # xla: a data-dependent length runs on numpy
        got = fn(d2s.to_tensor(x))
    want = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)


def _unique_all(x):
    return d2s.unique(x, return_index=True, return_inverse=True, return_counts=True)



def test_dtype_questions():
    f = d2s.to_tensor(A.astype("float32"))
    i = d2s.to_tensor(np.arange(3))
    assert f.is_floating_point() and not f.is_integer() and not f.is_complex()
    assert i.is_integer() and not i.is_floating_point()
    assert int(d2s.rank(f).item()) == 2
    assert bool(d2s.is_empty(d2s.zeros([0, 3])).item()) and not bool(f.is_empty().item())


def test_paddle_functions_are_tensor_methods():
    x = d2s.to_tensor(A)
    y = d2s.to_tensor(B)
    np.testing.assert_allclose(x.maximum(y).numpy(), np.maximum(A, B))
    # (Paddle binds the receiver as the condition)
    np.testing.assert_allclose((x > 0).where(x, y).numpy(), np.where(A > 0, A, B))
    np.testing.assert_allclose(x.cosh().numpy(), np.cosh(A))
    np.testing.assert_allclose(x.remainder(y).numpy(), np.mod(A, B))
    np.testing.assert_array_equal(d2s.to_tensor(np.array([2, 1, 2])).unique().numpy(), [1, 2])
    np.testing.assert_allclose(x.dot(y).numpy(), (A * B).sum(-1))
    assert [tuple(t.shape) for t in x.unstack(1)] == [(3,)] * 4


def _inplace_forms(x):
    y = x * 1.0
    y.ceil_()
    z = x + 0.5
    z.clip_(0.0, 1.0)
    w = x * 2.0
    w.sigmoid_()
    return y, z, w


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_inplace_forms_eager_and_converted(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    want = [np.ceil(A), np.clip(A + 0.5, 0.0, 1.0), 1.0 / (1.0 + np.exp(-2.0 * A))]
    for fn in (_inplace_forms, d2s.jit.to_static(_inplace_forms, backend=backend)):
        got = fn(d2s.to_tensor(A))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-6)
    x = d2s.to_tensor(A)
    same = d2s.floor_(x)
    assert same is x
    np.testing.assert_allclose(x.numpy(), np.floor(A))


def test_inplace_name_lists_agree():
    from d2s import tensor_methods
    from d2s.convert.transformers import inplace_methods
    assert set(inplace_methods.MORE_INPLACE_NAMES) == {
        n + "_" for n in tensor_methods.INPLACE_FORMS}
    assert set(inplace_methods.DIAGONAL_FILL_NAMES) == {
        n + "_" for n in tensor_methods.DIAGONAL_FILLS}


class _Clipper:
    """A user's own object with a method named like a Paddle in-place one."""

    def __init__(self):
        self.calls = 0

    def clip_(self):
        self.calls += 1


def _user_object_method(x, c):
    c.clip_()
    return x * 2.0


def test_user_method_with_an_inplace_name_keeps_its_receiver():
    c = _Clipper()
    got = d2s.jit.to_static(_user_object_method)(d2s.to_tensor(A), c)
    np.testing.assert_allclose(got.numpy(), A * 2.0)
    assert c.calls == 1


def _noisy(x):
    y = x * 1.0
    y.uniform_(2.0, 3.0)
    z = x * 1.0
    z.normal_(10.0, 0.01)
    w = x * 1.0
    w.exponential_(4.0)
    return y, z, w


@pytest.mark.parametrize("mode", ["eager", "numpy", "xla"])
def test_random_fills_redraw_in_place(mode):
    if mode == "xla":
        pytest.importorskip("jax")
    fn = _noisy if mode == "eager" else d2s.jit.to_static(_noisy, backend=mode)
    x = d2s.to_tensor(np.zeros((200, 50), "float32"))
    y, z, w = fn(x)
    for t in (y, z, w):
        assert t.numpy().dtype == np.float32 and t.numpy().shape == (200, 50)
    y, z, w = y.numpy(), z.numpy(), w.numpy()
    assert 2.0 <= y.min() and y.max() < 3.0 and abs(y.mean() - 2.5) < 0.02
    assert abs(z.mean() - 10.0) < 0.01 and abs(z.std() - 0.01) < 0.002
    assert w.min() >= 0.0 and abs(w.mean() - 0.25) < 0.02    # Exp(4): mean 1/4
    again = fn(x)[0].numpy()
    assert not np.array_equal(again, y)                       # drawn anew per call
    from d2s import tensor_methods
    from d2s.convert.transformers import inplace_methods
    assert inplace_methods.RANDOM_FILL_NAMES == tensor_methods.RANDOM_FILLS
