"""MultivariateNormal by covariance, precision and scale_tril: log_prob,
entropy, mean and variance against torch (gradients, to_static on numpy and
xla), sample moments, and rsample gradients by finite differences."""
import os
import sys

import numpy as np
import pytest

import d2s
import d2s.distribution as D

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "core"))
from ops_check import check  # noqa: E402

torch = pytest.importorskip("torch")
td = torch.distributions

rng = np.random.default_rng(3)
LOC = rng.standard_normal((2, 3))
_M = rng.standard_normal((2, 3, 3))
COV = _M @ _M.transpose(0, 2, 1) + 3 * np.eye(3)
TRIL = np.linalg.cholesky(COV)
VALUE = rng.standard_normal((2, 3))


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_densities_match_torch(kind):
    mat = {"covariance_matrix": COV, "precision_matrix": np.linalg.inv(COV),
           "scale_tril": TRIL}[kind]

    def fn(loc, m, v):
        d = D.MultivariateNormal(loc, **{kind: m})
        return d.log_prob(v), d.entropy(), d.variance

    def ref(loc, m, v):
        # symmetric matrices: differentiate the symmetric part, as d2s reads only one triangle
        if kind != "scale_tril":
            m = 0.5 * (m + np.swapaxes(m, -1, -2))
        d = td.MultivariateNormal(torch.tensor(loc), **{kind: torch.tensor(m)})
        return d.log_prob(torch.tensor(v)).numpy(), d.entropy().numpy(), d.variance.numpy()

    # gradients only by loc and the value: d2s's Cholesky reads one triangle of the matrix
    check(fn, [LOC, mat, VALUE], ref, onnx=False,
          grad=False, rtol=1e-6, unknown="first")  # the event dim is known
    loc = d2s.to_tensor(LOC, stop_gradient=False)
    v = d2s.to_tensor(VALUE, stop_gradient=False)
    D.MultivariateNormal(loc, **{kind: mat}).log_prob(v).sum().backward()
    tl = torch.tensor(LOC, requires_grad=True)
    tv = torch.tensor(VALUE, requires_grad=True)
    td.MultivariateNormal(tl, **{kind: torch.tensor(mat)}).log_prob(tv).sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), tl.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-6)


def test_scale_tril_gradient_matches_torch():
    t = d2s.to_tensor(TRIL, stop_gradient=False)
    d = D.MultivariateNormal(LOC, scale_tril=t)
    (d.log_prob(VALUE).sum() + d.entropy().sum()).backward()
    tt = torch.tensor(TRIL, requires_grad=True)
    td_ = td.MultivariateNormal(torch.tensor(LOC), scale_tril=tt)
    (td_.log_prob(torch.tensor(VALUE)).sum() + td_.entropy().sum()).backward()
    np.testing.assert_allclose(np.tril(t.grad.numpy()), tt.grad.numpy(), rtol=1e-6, atol=1e-12)


def test_sample_moments_and_shapes():
    d = D.MultivariateNormal(LOC[0], covariance_matrix=COV[0])
    assert d.batch_shape == () and d.event_shape == (3,)
    d2s.seed(5)
    s = d.sample([20000]).numpy()
    assert s.shape == (20000, 3)
    np.testing.assert_allclose(s.mean(0), LOC[0], atol=5 * np.sqrt(COV[0].diagonal().max() /
                                                                     20000))
    np.testing.assert_allclose(np.cov(s.T), COV[0], atol=0.12 * COV[0].diagonal().max())
    lp = d.log_prob(s[:5]).numpy()
    want = td.MultivariateNormal(torch.tensor(LOC[0]),
                                 torch.tensor(COV[0])).log_prob(torch.tensor(s[:5])).numpy()
    np.testing.assert_allclose(lp, want, rtol=1e-6)
    b = D.MultivariateNormal(LOC, scale_tril=TRIL)
    assert b.batch_shape == (2,) and tuple(b.sample([4]).shape) == (4, 2, 3)


def test_rsample_gradient_by_finite_differences():
    w = np.linspace(-1.0, 1.0, 12).reshape(2, 2, 3)

    def f(loc, tril, grad=False):
        tl = d2s.to_tensor(loc, stop_gradient=not grad)
        tt = d2s.to_tensor(tril, stop_gradient=not grad)
        d2s.seed(2)
        loss = d2s.sum(D.MultivariateNormal(tl, scale_tril=tt).rsample([2]) * d2s.to_tensor(w))
        if grad:
            loss.backward()
            return tl.grad.numpy(), tt.grad.numpy()
        return float(loss.numpy())

    g_loc, g_tril = f(LOC, TRIL, grad=True)
    eps = 1e-6
    for arr, got, idx in [(LOC, g_loc, (1, 2)), (TRIL, g_tril, (0, 2, 1)),
                          (TRIL, g_tril, (1, 1, 1))]:
        up, dn = arr.copy(), arr.copy()
        up[idx] += eps
        dn[idx] -= eps
        args_up = (up, TRIL) if arr is LOC else (LOC, up)
        args_dn = (dn, TRIL) if arr is LOC else (LOC, dn)
        fd = (f(*args_up) - f(*args_dn)) / (2 * eps)
        np.testing.assert_allclose(got[idx], fd, rtol=1e-5)


def test_needs_exactly_one_matrix():
    with pytest.raises(ValueError, match="exactly one"):
        D.MultivariateNormal(LOC, covariance_matrix=COV, scale_tril=TRIL)
    with pytest.raises(ValueError, match="exactly one"):
        D.MultivariateNormal(LOC)


def test_matrix_properties_match_torch():
    for kind, mat in [("covariance_matrix", COV), ("precision_matrix", np.linalg.inv(COV)),
                      ("scale_tril", TRIL)]:
        d = D.MultivariateNormal(LOC, **{kind: mat})
        t = td.MultivariateNormal(torch.tensor(LOC), **{kind: torch.tensor(mat)})
        np.testing.assert_allclose(d.covariance_matrix.numpy(), t.covariance_matrix.numpy(),
                                   rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(d.precision_matrix.numpy(), t.precision_matrix.numpy(),
                                   rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(d.scale_tril.numpy(), t.scale_tril.numpy(), rtol=1e-9,
                                   atol=1e-12)
