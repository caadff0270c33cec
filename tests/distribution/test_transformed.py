"""Independent and TransformedDistribution with Exp/Affine/Sigmoid/Tanh
transforms against torch.distributions (values, gradients, to_static on
numpy and xla), and a tanh-squashed Gaussian policy's rsample gradients."""
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

rng = np.random.default_rng(13)
LOC = rng.standard_normal((2, 3)) * 0.5
SCALE = rng.uniform(0.5, 1.5, (2, 3))

# name: (d2s transforms, torch transforms, a value in the image)
CHAINS = {
    "exp": (lambda: [D.ExpTransform()], lambda: [tt.ExpTransform()],
            rng.uniform(0.3, 2.0, (2, 3))),
    "affine_tanh": (lambda: [D.AffineTransform(0.5, 2.0), D.TanhTransform()],
                    lambda: [tt.AffineTransform(0.5, 2.0), tt.TanhTransform()],
                    rng.uniform(-0.9, 0.9, (2, 3))),
    "sigmoid": (lambda: [D.SigmoidTransform()], lambda: [tt.SigmoidTransform()],
                rng.uniform(0.1, 0.9, (2, 3))),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_transformed_log_prob_matches_torch(name):
    chain, tchain, value = CHAINS[name]

    def fn(loc, scale, v):
        base = D.Independent(D.Normal(loc, scale), 1)
        return D.TransformedDistribution(base, chain()).log_prob(v)

    def ref(loc, scale, v):
        base = td.Independent(td.Normal(torch.tensor(loc), torch.tensor(scale)), 1)
        return td.TransformedDistribution(base, tchain()).log_prob(torch.tensor(v)).numpy()

    # ONNX Runtime has no float64 Softplus kernel (the sigmoid and tanh Jacobians use it)
    check(fn, [LOC, SCALE, value], ref, onnx=name == "exp", rtol=1e-6, grad_rtol=1e-4)


def test_transforms_forward_inverse_and_jacobians_match_torch():
    x = rng.standard_normal(4)
    for ours, theirs in [(D.ExpTransform(), tt.ExpTransform()),
                         (D.AffineTransform(1.0, -3.0), tt.AffineTransform(1.0, -3.0)),
                         (D.SigmoidTransform(), tt.SigmoidTransform()),
                         (D.TanhTransform(), tt.TanhTransform())]:
        y = ours.forward(x).numpy()
        ty = theirs(torch.tensor(x))
        np.testing.assert_allclose(y, ty.numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours.inverse(y).numpy(), x, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ours.forward_log_det_jacobian(x).numpy(),
                                   theirs.log_abs_det_jacobian(torch.tensor(x), ty).numpy(),
                                   rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ours.inverse_log_det_jacobian(y).numpy(),
                                   -theirs.log_abs_det_jacobian(torch.tensor(x), ty).numpy(),
                                   rtol=1e-8, atol=1e-12)


def test_independent_shapes_and_entropy():
    d = D.Independent(D.Normal(LOC, SCALE), 1)
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    want = td.Independent(td.Normal(torch.tensor(LOC), torch.tensor(SCALE)), 1).entropy()
    np.testing.assert_allclose(d.entropy().numpy(), want.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="reinterpreted_batch_rank"):
        D.Independent(D.Normal(LOC, SCALE), 3)


def test_squashed_gaussian_policy_rsample_gradients():
    """SAC's policy: a = tanh(loc + scale * eps); the loss's gradient by loc
    against finite differences of the seeded draw."""
    def loss(loc, grad=False):
        t = d2s.to_tensor(loc, stop_gradient=not grad)
        d = D.TransformedDistribution(D.Normal(t, d2s.to_tensor(SCALE)), [D.TanhTransform()])
        d2s.seed(1)
        a = d.rsample([2])
        out = d2s.sum(a * a) - d2s.sum(d.log_prob(d2s.clip(a, -0.999, 0.999)))
        if grad:
            out.backward()
            return t.grad.numpy()
        return float(out.numpy())

    got = loss(LOC, grad=True)
    eps = 1e-6
    for idx in [(0, 0), (1, 2)]:
        up, dn = LOC.copy(), LOC.copy()
        up[idx] += eps
        dn[idx] -= eps
        np.testing.assert_allclose(got[idx], (loss(up) - loss(dn)) / (2 * eps), rtol=1e-4)
