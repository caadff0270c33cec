"""Chain, Independent, Reshape, Stack, StickBreaking, Power, Abs and Softmax
transforms against torch's (forward, inverse, log-det Jacobians), and a
TransformedDistribution whose event rank a transform raises (a logistic-normal
on the simplex) against torch, with to_static on numpy and xla."""
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
tt = td.transforms

rng = np.random.default_rng(19)
X = rng.standard_normal((2, 3))

PAIRS = {
    "chain": (lambda: D.ChainTransform([D.AffineTransform(0.3, 2.0), D.SigmoidTransform()]),
              lambda: tt.ComposeTransform([tt.AffineTransform(0.3, 2.0),
                                           tt.SigmoidTransform()]), X),
    "power": (lambda: D.PowerTransform(2.5), lambda: tt.PowerTransform(2.5), np.abs(X) + 0.1),
    "independent": (lambda: D.IndependentTransform(D.TanhTransform(), 1),
                    lambda: tt.IndependentTransform(tt.TanhTransform(), 1), X),
    "stick_breaking": (lambda: D.StickBreakingTransform(), lambda: tt.StickBreakingTransform(),
                       X),
    "reshape": (lambda: D.ReshapeTransform((3,), (3, 1)),
                lambda: tt.ReshapeTransform((3,), (3, 1)), X),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_transform_matches_torch(name):
    ours, theirs, x = PAIRS[name][0](), PAIRS[name][1](), PAIRS[name][2]
    y = ours.forward(x)
    ty = theirs(torch.tensor(x))
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ours.inverse(y).numpy(), x, rtol=1e-9, atol=1e-12)
    want = theirs.log_abs_det_jacobian(torch.tensor(x), ty).numpy()
    np.testing.assert_allclose(ours.forward_log_det_jacobian(x).numpy(), want, rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(ours.inverse_log_det_jacobian(y).numpy(), -want, rtol=1e-9,
                               atol=1e-12)
    assert tuple(ours.forward_shape(x.shape)) == tuple(theirs.forward_shape(x.shape))
    assert tuple(ours.inverse_shape(y.shape)) == tuple(theirs.inverse_shape(ty.shape))


def test_stack_abs_softmax():
    s = D.StackTransform([D.ExpTransform(), D.AffineTransform(1.0, 3.0)], axis=1)
    x = rng.standard_normal((4, 2))
    y = s.forward(x).numpy()
    np.testing.assert_allclose(y, np.stack([np.exp(x[:, 0]), 1 + 3 * x[:, 1]], 1), rtol=1e-12)
    np.testing.assert_allclose(s.inverse(y).numpy(), x, rtol=1e-9)
    np.testing.assert_allclose(s.forward_log_det_jacobian(x).numpy(),
                               np.stack([x[:, 0], np.full(4, np.log(3.0))], 1), rtol=1e-12)
    a = D.AbsTransform()
    neg, pos = a.inverse(np.array([1.0, 2.0]))
    np.testing.assert_allclose(neg.numpy(), [-1.0, -2.0])
    np.testing.assert_allclose(pos.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(a.forward(np.array([-3.0, 2.0])).numpy(), [3.0, 2.0])
    sm = D.SoftmaxTransform().forward(X).numpy()
    np.testing.assert_allclose(sm, np.exp(X) / np.exp(X).sum(-1, keepdims=True), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="not a bijection"):
        D.SoftmaxTransform().forward_log_det_jacobian(X)
    assert D.transform.ChainTransform is D.ChainTransform  # Paddle's module path


def test_logistic_normal_on_the_simplex_matches_torch():
    loc = rng.standard_normal((2, 3)) * 0.3
    scale = rng.uniform(0.5, 1.5, (2, 3))
    value = rng.dirichlet(np.ones(4), 2)

    def fn(loc, scale, v):
        d = D.TransformedDistribution(D.Independent(D.Normal(loc, scale), 1),
                                      [D.StickBreakingTransform()])
        return d.log_prob(v)

    def ref(loc, scale, v):
        d = td.TransformedDistribution(
            td.Independent(td.Normal(torch.tensor(loc), torch.tensor(scale)), 1),
            [tt.StickBreakingTransform()], validate_args=False)
        return d.log_prob(torch.tensor(v)).numpy()

    d = D.TransformedDistribution(D.Independent(D.Normal(loc, scale), 1),
                                  [D.StickBreakingTransform()])
    assert d.batch_shape == (2,) and d.event_shape == (4,)
    d2s.seed(1)
    s = d.sample([5]).numpy()
    assert s.shape == (5, 2, 4)
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-12)
    # ONNX Runtime has no float64 Softplus kernel; the event dim is known
    check(fn, [loc, scale, value], ref, onnx=False, rtol=1e-8, grad_rtol=1e-4, unknown="first")
