"""F.margin_cross_entropy (single device): loss and softmax against a numpy
reference of the combined margin (ArcFace m2, CosFace m3, SphereFace m1),
finite-difference gradients, numpy+xla static, unknown batch dim, ONNX
Runtime (the shared ops_check); reductions; group refused."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from ops_check import check

RNG = np.random.default_rng(29)
X = RNG.uniform(-0.9, 0.9, (4, 5))
LABEL = np.array([1, 0, 4, 2])


def _ref(x, label, m1, m2, m3, s):
    z = x.copy()
    rows = np.arange(len(x))
    z[rows, label] = np.cos(m1 * np.arccos(x[rows, label]) + m2) - m3
    z = z * s
    z = z - z.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return -logp[rows, label].reshape(-1, 1), np.exp(logp)


@pytest.mark.parametrize("m1,m2,m3,s", [(1.0, 0.5, 0.0, 8.0), (1.3, 0.2, 0.1, 4.0)])
def test_against_reference(m1, m2, m3, s):
    check(lambda x, lab: F.margin_cross_entropy(x, lab, m1, m2, m3, s, return_softmax=True,
                                                reduction=None),
          [X, LABEL], lambda x, lab: _ref(x, lab, m1, m2, m3, s), unknown="first",
          grad_rtol=1e-4, onnx=m1 == 1.0)  # m1 != 1 needs Acos: float32 only in ONNX Runtime


def test_reductions_and_errors():
    per = _ref(X, LABEL, 1.0, 0.5, 0.0, 64.0)[0]
    got = F.margin_cross_entropy(d2s.to_tensor(X), d2s.to_tensor(LABEL))
    np.testing.assert_allclose(got.numpy(), per.mean(), rtol=1e-10)
    got = F.margin_cross_entropy(d2s.to_tensor(X), d2s.to_tensor(LABEL.reshape(-1, 1)),
                                 reduction="sum")
    np.testing.assert_allclose(got.numpy(), per.sum(), rtol=1e-10)
    with pytest.raises(NotImplementedError, match="group"):
        F.margin_cross_entropy(d2s.to_tensor(X), d2s.to_tensor(LABEL), group=object())
