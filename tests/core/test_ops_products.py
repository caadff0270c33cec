"""diag ... corrcoef (d2s/core/ops/products.py, issue 25): values vs numpy
(or PyTorch where numpy has no such function), gradients by finite
differences, to_static on numpy and xla, unknown dims, ONNX Runtime."""
import itertools

import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(25)


def f64(*s):
    return R.uniform(0.5, 1.5, size=s) * R.choice([-1.0, 1.0], size=s)


def _diag_embed(x, offset=0):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    for idx in np.ndindex(x.shape[:-1]):
        out[idx] = np.diag(x[idx], offset)
    return out


def _cdist(x, y, p):
    d = np.abs(x[..., :, None, :] - y[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(x.dtype)
    if p == np.inf:
        return d.max(-1)
    return (d ** p).sum(-1) ** (1.0 / p)


def _renorm(x, p, axis, max_norm):
    others = tuple(i for i in range(x.ndim) if i != axis)
    n = (np.abs(x) ** p).sum(others, keepdims=True) ** (1.0 / p)
    return x * np.where(n > max_norm, max_norm / (n + 1e-7), 1.0)


def _block_diag(*ms):
    ms = [np.atleast_2d(m) for m in ms]
    out = np.zeros((sum(m.shape[0] for m in ms), sum(m.shape[1] for m in ms)))
    r = c = 0
    for m in ms:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def _cross_np(x, y, axis):
    return np.cross(x, y, axis=axis)


# (id, fn, inputs, numpy reference, check options)
CASES = [
    ("diag_vector", lambda x: (d2s.diag(x), d2s.diag(x, 1), x.diag(-2)), [f64(3)],
     lambda x: (np.diag(x), np.diag(x, 1), np.diag(x, -2)), {}),
    ("diag_padding", lambda x: d2s.diag(x, 1, padding_value=7.0), [f64(2)],
     lambda x: np.diag(x, 1) + 7.0 * (np.diag(np.ones(2), 1) == 0), {}),
    ("diag_matrix", lambda x: (d2s.diag(x), d2s.diag(x, 1), d2s.diag(x, -1)), [f64(3, 4)],
     lambda x: (np.diag(x), np.diag(x, 1), np.diag(x, -1)), {}),
    ("diag_embed", lambda x: (d2s.diag_embed(x), d2s.diag_embed(x, 1, 0, 2)), [f64(2, 3)],
     lambda x: (_diag_embed(x), np.moveaxis(_diag_embed(x, 1), (-2, -1), (0, 2))), {}),
    ("diagflat", lambda x: (d2s.diagflat(x), d2s.diagflat(x, -1)), [f64(2, 2)],
     lambda x: (np.diagflat(x), np.diagflat(x, -1)), {"unknown": "first"}),
    ("kron", lambda x, y: d2s.kron(x, y), [f64(2, 3), f64(2, 2)], np.kron,
     {"unknown": "first"}),
    ("kron_ranks", lambda x, y: x.kron(y), [f64(3), f64(2, 2)], np.kron,
     {"unknown_dims": False}),
    ("tensordot", lambda x, y: (d2s.tensordot(x, y, 1), d2s.tensordot(x, y, [[0], [1]])),
     [f64(2, 3), f64(3, 2)],
     lambda x, y: (np.tensordot(x, y, 1), np.tensordot(x, y, [[0], [1]])), {}),
    ("tensordot_2", lambda x, y: d2s.tensordot(x, y), [f64(2, 3, 2), f64(3, 2, 2)],
     lambda x, y: np.tensordot(x, y), {}),
    ("inner_outer", lambda x, y: (d2s.inner(x, y), d2s.outer(x, y), x.outer(y)),
     [f64(2, 3), f64(4, 3)], lambda x, y: (np.inner(x, y), np.outer(x, y), np.outer(x, y)),
     {}),
    ("cross", lambda x, y: (d2s.cross(x, y), d2s.cross(x, y, axis=1)),
     [f64(3, 3), f64(3, 3)],
     lambda x, y: (_cross_np(x, y, 0), _cross_np(x, y, 1)), {"unknown_dims": False}),
    ("cdist", lambda x, y: (d2s.cdist(x, y), d2s.cdist(x, y, 1.0), d2s.cdist(x, y, 3.0),
                            d2s.cdist(x, y, float("inf"))),
     [f64(3, 2), f64(4, 2)],
     lambda x, y: (_cdist(x, y, 2), _cdist(x, y, 1), _cdist(x, y, 3), _cdist(x, y, np.inf)),
     {}),
    ("dist", lambda x, y: (d2s.dist(x, y), d2s.dist(x, y, 1), x.dist(y, float("inf"))),
     [f64(2, 3), f64(3)],
     lambda x, y: (np.linalg.norm((x - y).ravel()), np.abs(x - y).sum(), np.abs(x - y).max()),
     {}),
    ("renorm", lambda x: (d2s.renorm(x, 2.0, 0, 1.5), d2s.renorm(x, 1.0, 1, 2.0)), [f64(3, 2)],
     lambda x: (_renorm(x, 2.0, 0, 1.5), _renorm(x, 1.0, 1, 2.0)), {}),
    ("moveaxis", lambda x: (d2s.moveaxis(x, 0, -1), x.moveaxis([0, 1], [2, 0])), [f64(2, 3, 4)],
     lambda x: (np.moveaxis(x, 0, -1), np.moveaxis(x, [0, 1], [2, 0])), {}),
    ("unflatten_view", lambda x: (d2s.unflatten(x, 1, [2, -1]), x.view([3, 2, 2]),
                                  d2s.view_as(x, d2s.zeros([4, 3]))),
     [f64(3, 4)], lambda x: (x.reshape(3, 2, 2), x.reshape(3, 2, 2), x.reshape(4, 3)),
     {"unknown": "first"}),
    ("broadcast_tensors", lambda x, y: tuple(d2s.broadcast_tensors([x, y])),
     [f64(2, 1), f64(3)], lambda x, y: tuple(np.broadcast_arrays(x, y)), {}),
    ("tensor_split", lambda x: tuple(d2s.tensor_split(x, 3)) + tuple(d2s.tensor_split(x, [1, -1], 1)),
     [f64(5, 4)],
     lambda x: tuple(np.array_split(x, 3)) + tuple(np.array_split(x, [1, -1], 1)),
     {"unknown_dims": False}),
    ("hvdsplit", lambda x: tuple(d2s.hsplit(x, 2)) + tuple(d2s.vsplit(x, [1]))
     + tuple(d2s.dsplit(x, 2)), [f64(2, 2, 4)],
     lambda x: tuple(np.hsplit(x, 2)) + tuple(np.vsplit(x, [1])) + tuple(np.dsplit(x, 2)),
     {"unknown_dims": False}),
    ("rot90", lambda x: (d2s.rot90(x), d2s.rot90(x, 2), x.rot90(-1, [1, 2])), [f64(2, 3, 2)],
     lambda x: (np.rot90(x), np.rot90(x, 2), np.rot90(x, -1, (1, 2))), {}),
    ("block_diag", lambda x, y, z: d2s.block_diag([x, y, z]), [f64(2, 2), f64(3), f64()],
     _block_diag, {"unknown_dims": False}),
    ("cartesian_prod", lambda x, y: d2s.cartesian_prod([x, y]), [f64(2), f64(3)],
     lambda x, y: np.array(list(itertools.product(x, y))), {"unknown_dims": False}),
    ("combinations", lambda x: (d2s.combinations(x), d2s.combinations(x, 3, True)), [f64(4)],
     lambda x: (np.array(list(itertools.combinations(x, 2))),
                np.array(list(itertools.combinations_with_replacement(x, 3)))),
     {"unknown_dims": False}),
    ("cov", lambda x: (d2s.cov(x), x.cov(rowvar=False, ddof=False)), [f64(2, 5)],
     lambda x: (np.cov(x), np.cov(x, rowvar=False, ddof=0)), {}),
    ("cov_weights", lambda x, f, a: d2s.cov(x, fweights=f, aweights=a),
     [f64(3, 4), np.array([1, 2, 1, 3]), np.array([0.5, 1.0, 2.0, 1.5])],
     lambda x, f, a: np.cov(x, fweights=f, aweights=a), {}),
    ("corrcoef", lambda x: d2s.corrcoef(x), [f64(3, 5)], np.corrcoef, {}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_products_op(case):
    name, fn, arrays, ref, opts = case
    check(fn, arrays, ref, **opts)


def test_index_constants():
    np.testing.assert_array_equal(d2s.tril_indices(3, 4, 1).numpy(),
                                  np.stack(np.tril_indices(3, 1, 4)))
    np.testing.assert_array_equal(d2s.triu_indices(3, offset=-1, dtype="int32").numpy(),
                                  np.stack(np.triu_indices(3, -1)).astype(np.int32))
    assert d2s.triu_indices(3).dtype == np.int64


def test_cdist_zero_distance_gradient_is_zero_like_torch():
    torch = pytest.importorskip("torch")
    x = np.array([[0.0, 1.0], [2.0, 3.0]])
    t = d2s.to_tensor(x, stop_gradient=False)
    d2s.cdist(t, t).sum().backward()
    tt = torch.tensor(x, requires_grad=True)
    torch.cdist(tt, tt).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), atol=1e-12)


def test_clear_errors():
    x = d2s.to_tensor(np.ones((2, 2)))
    with pytest.raises(ValueError, match="no axis of size 3"):
        d2s.cross(x, x)
    with pytest.raises(TypeError, match="astype"):
        x.view("int64")
    with pytest.raises(ValueError, match="equal pieces"):
        d2s.hsplit(d2s.to_tensor(np.ones((2, 3))), 2)
