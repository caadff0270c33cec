"""repeat_interleave ... isin (d2s/core/ops/index_more.py, issue 25):
values vs numpy or PyTorch, gradients by finite differences, to_static on
numpy and xla, unknown dims, ONNX Runtime; the data-dependent lengths
(unique_consecutive, repeats computed in the program) on numpy."""
import warnings

import numpy as np
import pytest

import d2s
from ops_check import assert_same, check

R = np.random.default_rng(28)


def f64(*s):
    return R.uniform(0.5, 1.5, size=s) * R.choice([-1.0, 1.0], size=s)


def _index_add(x, index, axis, value):
    out = x.copy()
    np.add.at(out, (slice(None),) * axis + (index,), value)
    return out


def _scatter_nd_add(x, index, updates):
    out = x.copy()
    np.add.at(out, tuple(index[..., j] for j in range(index.shape[-1])), updates)
    return out


def _hist(x, bins, lo, hi, weights=None):
    if lo == hi == 0:
        lo, hi = x.min(), x.max()
    return np.histogram(x, bins, (lo, hi), weights=weights)[0]


IDX = np.array([2, 0, 2])
CASES = [
    ("repeat_interleave_int", lambda x: (d2s.repeat_interleave(x, 2), x.repeat_interleave(3, 1)),
     [f64(2, 3)], lambda x: (np.repeat(x, 2), np.repeat(x, 3, 1)), {"unknown": "first"}),
    ("repeat_interleave_tensor", lambda x: d2s.repeat_interleave(x, d2s.to_tensor([1, 0, 2]), 1),
     [f64(2, 3)], lambda x: np.repeat(x, [1, 0, 2], 1), {"unknown": "first"}),
    ("index_add", lambda x, v: d2s.index_add(x, d2s.to_tensor(IDX), 1, v),
     [f64(2, 4), f64(2, 3)], lambda x, v: _index_add(x, IDX, 1, v), {}),
    ("index_put", lambda x, v: (d2s.index_put(x, (d2s.to_tensor([0, 2]), d2s.to_tensor([1, 1])), v),
                                x.index_put((d2s.to_tensor([1, 1]),), v, accumulate=True)),
     [f64(3, 2), f64(2)],
     lambda x, v: (_put(x, ([0, 2], [1, 1]), v), _index_add(x, np.array([1, 1]), 0, v)),
     {"unknown": "first"}),
    ("scatter_nd_add", lambda x, u: d2s.scatter_nd_add(x, d2s.to_tensor([[1, 0], [1, 0], [0, 2]]), u),
     [f64(2, 3), f64(3)], lambda x, u: _scatter_nd_add(x, np.array([[1, 0], [1, 0], [0, 2]]), u),
     {}),
    ("searchsorted", lambda s, v: (d2s.searchsorted(s, v), d2s.searchsorted(s, v, True, True)),
     [np.array([1.0, 2.0, 2.0, 5.0]), np.array([[0.5, 2.0], [5.0, 9.0]])],
     lambda s, v: (np.searchsorted(s, v), np.searchsorted(s, v, "right").astype(np.int32)),
     {"grad": False}),
    ("searchsorted_batched", lambda s, v: d2s.searchsorted(s, v),
     [np.array([[1, 3, 5], [2, 4, 6]]), np.array([[3, 0], [7, 4]])],
     lambda s, v: np.stack([np.searchsorted(s[i], v[i]) for i in range(2)]), {}),
    ("bucketize", lambda x, b: (d2s.bucketize(x, b), x.bucketize(b, right=True)),
     [np.array([[0.0, 1.0], [2.5, 7.0]]), np.array([1.0, 2.5, 4.0])],
     lambda x, b: (np.searchsorted(b, x), np.searchsorted(b, x, "right")), {"grad": False}),
    ("histogram", lambda x: (d2s.histogram(x, 4), d2s.histogram(x, 3, -1, 1)),
     [np.array([0.0, 0.5, -2.0, 1.0, 3.0, 0.25])],
     lambda x: (_hist(x, 4, 0, 0), _hist(x, 3, -1, 1)), {"grad": False}),
    ("histogram_weight", lambda x, w: d2s.histogram(x, 3, 0, 3, weight=w),
     [np.array([0.5, 1.5, 1.2, 2.9]), np.array([1.0, 2.0, 0.5, 3.0])],
     lambda x, w: _hist(x, 3, 0, 3, w), {"grad": False}),
    ("isin", lambda x, t: (d2s.isin(x, t), d2s.isin(x, t, invert=True)),
     [np.array([[1, 2], [3, 4]]), np.array([4, 1, 9])],
     lambda x, t: (np.isin(x, t), np.isin(x, t, invert=True)), {}),
]


def _put(x, idx, v):
    out = x.copy()
    out[tuple(np.array(i) for i in idx)] = v
    return out


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_index_more_op(case):
    name, fn, arrays, ref, opts = case
    check(fn, arrays, ref, **opts)


def test_histogram_matches_torch_histc_and_density():
    torch = pytest.importorskip("torch")
    x = R.uniform(-2, 2, size=20)
    np.testing.assert_array_equal(d2s.histogram(d2s.to_tensor(x), 5).numpy(),
                                  torch.histc(torch.from_numpy(x), 5).numpy().astype(np.int64))
    d = d2s.histogram(d2s.to_tensor(x), 5, -2, 2, density=True)
    assert d.dtype == np.float32
    np.testing.assert_allclose(d.numpy(), np.histogram(x, 5, (-2, 2), density=True)[0],
                               rtol=1e-6)


def _torch_unique_consecutive(x, axis=None):
    torch = pytest.importorskip("torch")
    out, inv, cnt = torch.unique_consecutive(torch.from_numpy(x), return_inverse=True,
                                             return_counts=True, dim=axis)
    return out.numpy(), inv.numpy(), cnt.numpy()


@pytest.mark.parametrize("axis", [None, 0])
def test_unique_consecutive_eager_and_static(axis):
    x = np.array([[1, 1], [1, 1], [2, 0], [2, 0], [1, 1]])
    want = _torch_unique_consecutive(x, axis)

    def fn(t):
        return d2s.unique_consecutive(t, True, True, axis=axis)
    for k, (g, w) in enumerate(zip(fn(d2s.to_tensor(x)), want)):
        assert_same(g, w, f"eager output {k}")
    sf = d2s.jit.to_static(fn)
    for k, (g, w) in enumerate(zip(sf(d2s.to_tensor(x)), want)):
        assert_same(g, w, f"static output {k}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (xla runs this data-dependent program on numpy)
        got = d2s.jit.to_static(fn, backend="xla")(d2s.to_tensor(x))
    for k, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, f"xla output {k}")


def test_repeat_interleave_with_repeats_computed_in_the_program():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    r = np.array([2, 0, 1])

    def fn(t, reps):
        return d2s.repeat_interleave(t, reps + 0, axis=0)
    want = np.repeat(x, r, 0)
    assert_same(d2s.jit.to_static(fn)(d2s.to_tensor(x), d2s.to_tensor(r)), want, "static")
    t = d2s.to_tensor(x, stop_gradient=False)
    d2s.repeat_interleave(t, d2s.to_tensor(r), 0).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.repeat(r[:, None], 2, 1).astype(float))


def test_bad_repeats():
    with pytest.raises(ValueError, match="repeats"):
        d2s.repeat_interleave(d2s.to_tensor([1.0, 2.0]), [1, 2, 3])
