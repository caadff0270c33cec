"""standard_gamma_grad (dx/dalpha of a Gamma(alpha, 1) draw at fixed CDF value):
the numpy kernel against -(dP/dalpha) / density with P torch's regularized
incomplete gamma (central differences in float64), and the xla rule (JAX's
random_gamma_grad) against the kernel; to_static on numpy and xla, unknown
dims, via ops_check."""
import math

import numpy as np
import pytest

from ops_check import check

from d2s.core.ops.gamma_grad import standard_gamma_grad

torch = pytest.importorskip("torch")


def _reference(x, alpha):
    x, a = np.broadcast_arrays(x, alpha)
    h = 1e-6 * np.maximum(a, 1.0)
    tx = torch.tensor(x)
    dp = (torch.special.gammainc(torch.tensor(a + h), tx)
          - torch.special.gammainc(torch.tensor(a - h), tx)).numpy() / (2 * h)
    log_f = (a - 1) * np.log(x) - x - np.vectorize(math.lgamma)(a)
    return -dp / np.exp(log_f)


@pytest.mark.parametrize("alpha", [0.3, 1.0, 2.5, 40.0])
def test_standard_gamma_grad(alpha):
    rng = np.random.default_rng(int(alpha * 10))
    # the draws' own range: 5% .. 95% quantiles of Gamma(alpha)
    x = np.quantile(rng.gamma(alpha, size=4000), [0.05, 0.3, 0.6, 0.95])
    a = np.full(4, alpha)
    check(lambda x, a: standard_gamma_grad(x, a), [x, a], _reference, grad=False, onnx=False,
          rtol=2e-5)
