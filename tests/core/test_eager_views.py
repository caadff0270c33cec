"""Eager views (core.views): a Tensor taken by basic indexing writes the
tensor it came from when written in place, as in PyTorch (`y[0][1] = 7`,
`row = y[0]; row.add_(1)`, chains); advanced indexing gives a copy. Values
and gradients against PyTorch on the same inputs; sibling views written in
turn; the leaf-view error."""
from __future__ import annotations

import numpy as np
import pytest

import d2s

rng = np.random.default_rng(25)
A = rng.standard_normal((2, 3, 4))
V = rng.standard_normal(4)


def _row_write(y, v):
    y[1][2] = v


def _row_alias(y, v):
    row = y[0]
    row[1] = v * 2.0
    row[2] = v


def _chain(y, v):
    y[1][0][3] = v[0] * 3.0


def _slice_method(y, v):
    y[:, 1:].add_(1.5)


def _ellipsis_none(y, v):
    y[..., 2][None][0, 1] = v[:3]


def _view_of_view_method(y, v):
    plane = y[1]
    plane[0].multiply_(v)


def _advanced_copy(y, v):
    y[[0, 1]][0] = v        # a copy: y keeps its values
    y[1:][0][0] = v         # a view of a view: written


CASES = [_row_write, _row_alias, _chain, _slice_method, _ellipsis_none, _view_of_view_method,
         _advanced_copy]


@pytest.mark.parametrize("write", CASES, ids=[c.__name__ for c in CASES])
def test_view_writes_match_pytorch_values_and_gradients(write):
    torch = pytest.importorskip("torch")
    xa = d2s.to_tensor(A, stop_gradient=False)
    va = d2s.to_tensor(V, stop_gradient=False)
    y = xa * 2.0
    write(y, va)
    w = rng.standard_normal(A.shape)
    (y * d2s.to_tensor(w)).sum().backward()

    xt = torch.tensor(A, requires_grad=True)
    vt = torch.tensor(V, requires_grad=True)
    yt = xt * 2.0
    write(yt, vt)
    (yt * torch.tensor(w)).sum().backward()

    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(xa.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    got_v = np.zeros_like(V) if va.grad is None else va.grad.numpy()
    want_v = np.zeros_like(V) if vt.grad is None else vt.grad.numpy()
    np.testing.assert_allclose(got_v, want_v, rtol=1e-12)


def test_a_view_follows_its_own_writes():
    y = d2s.to_tensor(np.zeros((2, 3)))
    row = y[1]
    row[0] = 1.0
    row[2] = 2.0      # the base was written by this view only: still its view
    np.testing.assert_array_equal(y.numpy(), [[0, 0, 0], [1, 0, 2]])
    np.testing.assert_array_equal(row.numpy(), [1, 0, 2])


def _siblings(y, v):
    a, b = y[0], y[0]
    a[1] = v[0] * 7.0
    b[0] = v[1]             # b takes y's values again first: the 7 stays
    row = y[1]
    y[1, 2] = v[2] * 5.0
    row.add_(v)             # likewise after a write of y itself
    rows = list(y[:, :2])
    rows[0][0] += 1.0
    rows[1][1] *= 2.0


def test_stale_views_write_from_their_base_values_as_pytorch():
    torch = pytest.importorskip("torch")
    y = d2s.to_tensor(A[0] * 1.0)
    _siblings(y, d2s.to_tensor(V))
    yt = torch.tensor(A[0] * 1.0)
    _siblings(yt, torch.tensor(V))
    np.testing.assert_allclose(y.numpy(), yt.numpy(), rtol=1e-12)


def test_a_view_of_a_leaf_that_requires_grad_refuses_the_write():
    x = d2s.to_tensor(np.ones((2, 2)), stop_gradient=False)
    row = x[0]
    with pytest.raises(RuntimeError, match="view of a leaf"):
        row[0] = 5.0
    np.testing.assert_array_equal(x.numpy(), np.ones((2, 2)))
    with d2s.no_grad():
        x[0][1] = 5.0
    np.testing.assert_array_equal(x.numpy(), [[1, 5], [1, 1]])
