"""LKJCholesky: log_prob against torch (values, gradients, to_static on numpy
and xla); draws are Cholesky factors of correlation matrices whose
off-diagonal quantiles match torch's sampler; the cvine method is refused."""
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


@pytest.mark.parametrize("dim, conc", [(2, 1.0), (3, 0.5), (4, 2.5)])
def test_log_prob_matches_torch_and_draws_are_correlation_factors(dim, conc):
    d = D.LKJCholesky(dim, np.array(conc))  # float64
    d2s.seed(dim)
    s = d.sample([4000]).numpy()
    assert s.shape == (4000, dim, dim) and d.event_shape == (dim, dim)
    np.testing.assert_array_equal(np.triu(s, 1), 0.0)
    corr = np.einsum("nij,nkj->nik", s, s)
    np.testing.assert_allclose(corr[:, range(dim), range(dim)], 1.0, rtol=1e-12)
    assert (s[:, range(dim), range(dim)] > 0).all()
    t = td.LKJCholesky(dim, torch.tensor(conc, dtype=torch.float64), validate_args=False)
    torch.manual_seed(0)
    ref = t.sample((40000,)).numpy()
    q = [0.1, 0.5, 0.9]
    np.testing.assert_allclose(np.quantile(s[:, -1, 0], q), np.quantile(ref[:, -1, 0], q),
                               atol=0.04)

    def fn(c, v):
        return D.LKJCholesky(dim, c).log_prob(v)

    def ref_lp(c, v):
        return td.LKJCholesky(dim, torch.tensor(c), validate_args=False).log_prob(
            torch.tensor(v)).numpy()

    check(fn, [np.array([conc]), s[:3]], ref_lp, onnx=False, rtol=1e-8, grad_rtol=1e-4,
          unknown="first")


def test_only_the_onion_method():
    with pytest.raises(NotImplementedError, match="sample_method='onion'"):
        D.LKJCholesky(3, 1.0, sample_method="cvine")
    with pytest.raises(ValueError, match="dim must be an int >= 2"):
        D.LKJCholesky(1)
