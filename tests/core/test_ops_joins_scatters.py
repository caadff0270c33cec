"""atleast_nd, h/v/d/column/row_stack, index_fill, masked_scatter,
scatter_nd, select/slice/diagonal_scatter, broadcast_shape
(d2s/core/ops/joins_scatters.py): values vs numpy, gradients by finite
differences, to_static on numpy and xla, unknown dims, ONNX Runtime."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(29)


def f64(*s):
    return R.uniform(0.5, 1.5, size=s) * R.choice([-1.0, 1.0], size=s)


def _index_fill(x, idx, axis, v):
    out = x.copy()
    out[(slice(None),) * axis + (idx,)] = v
    return out


def _masked_scatter(x, m, v):
    out = x.copy()
    out[m] = v.ravel()[:m.sum()]
    return out


def _scatter_nd(idx, u, shape):
    out = np.zeros(shape, u.dtype)
    np.add.at(out, tuple(idx[..., j] for j in range(idx.shape[-1])), u)
    return out


def _diag_scatter(x, y, offset, a1, a2):
    out = np.moveaxis(x.copy(), (a1, a2), (-2, -1))
    rows, cols = np.nonzero(np.eye(out.shape[-2], out.shape[-1], offset))
    out[..., rows, cols] = y
    return np.moveaxis(out, (-2, -1), (a1, a2))


MASK = np.array([[True, False, True], [False, True, True]])
CASES = [
    ("atleast", lambda x, y: (d2s.atleast_1d(x), *d2s.atleast_2d(x, y), d2s.atleast_3d(y)),
     [f64(), f64(3)],
     lambda x, y: (np.atleast_1d(x), *np.atleast_2d(x, y), np.atleast_3d(y)), {}),
    ("stacks", lambda x, y: (d2s.hstack([x, y]), d2s.vstack([x, y]), d2s.dstack([x, y]),
                             d2s.row_stack([x, y])),
     [f64(2, 3), f64(2, 3)],
     lambda x, y: (np.hstack([x, y]), np.vstack([x, y]), np.dstack([x, y]),
                   np.vstack([x, y])), {"unknown": "first"}),
    ("stacks_1d", lambda x, y: (d2s.hstack([x, y]), d2s.column_stack([x, y]),
                                d2s.vstack([x, y])),
     [f64(3), f64(3)],
     lambda x, y: (np.hstack([x, y]), np.column_stack([x, y]), np.vstack([x, y])),
     {"unknown_dims": False}),
    ("index_fill", lambda x: (d2s.index_fill(x, d2s.to_tensor([0, -1]), 1, 7.5),
                              d2s.index_fill(x, d2s.to_tensor([1]), 0, -1.0)),
     [f64(2, 4)], lambda x: (_index_fill(x, [0, -1], 1, 7.5), _index_fill(x, [1], 0, -1.0)), {}),
    ("masked_scatter", lambda x, v: d2s.masked_scatter(x, d2s.to_tensor(MASK), v),
     [f64(2, 3), f64(6)], lambda x, v: _masked_scatter(x, MASK, v), {"unknown": "first"}),
    ("scatter_nd", lambda u: d2s.scatter_nd(d2s.to_tensor([[1, 0], [1, 0], [0, 2]]), u, [2, 3]),
     [f64(3)], lambda u: _scatter_nd(np.array([[1, 0], [1, 0], [0, 2]]), u, (2, 3)), {}),
    ("select_scatter", lambda x, v: d2s.select_scatter(x, v, 1, 2), [f64(2, 3), f64(2)],
     lambda x, v: _index_fill(x, 2, 1, v), {}),
    ("slice_scatter", lambda x, v: d2s.slice_scatter(x, v, [1], [0], [4], [2]),
     [f64(2, 5), f64(2, 2)], lambda x, v: _index_fill(x, slice(0, 4, 2), 1, v), {}),
    ("diagonal_scatter", lambda x, y, z: (d2s.diagonal_scatter(x, y),
                                          d2s.diagonal_scatter(x, z, 1, 1, 0)),
     [f64(3, 4), f64(3), f64(2)],
     lambda x, y, z: (_diag_scatter(x, y, 0, 0, 1), _diag_scatter(x, z, 1, 1, 0)),
     {"unknown_dims": False}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_joins_scatters_op(case):
    name, fn, arrays, ref, opts = case
    check(fn, arrays, ref, **opts)


def test_broadcast_shape_and_errors():
    assert d2s.broadcast_shape([2, 1, 3], [4, 1]) == [2, 4, 3]
    with pytest.raises(ValueError):
        d2s.broadcast_shape([2, 3], [4])
    with pytest.raises(TypeError, match="bool"):
        d2s.masked_scatter(d2s.to_tensor([1.0]), d2s.to_tensor([1]), d2s.to_tensor([2.0]))
