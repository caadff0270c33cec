"""`F.normalize` (missing; the MoCo corpus model's query/key heads call it):
`x / max(||x||_p, epsilon)` along `axis`, against numpy and PyTorch's
definition, eagerly and converted, with a finite gradient at a zero row."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F

from harness import BACKENDS, close


def reference(x, p, axis, eps=1e-12):
    n = np.linalg.norm(x, ord=p, axis=axis, keepdims=True) if p != 1 else \
        np.abs(x).sum(axis=axis, keepdims=True)
    return x / np.maximum(n, eps)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("p, axis", [(2, 1), (1, -1), (2, 0)])
def test_normalize_matches_numpy_eager_and_static(backend, p, axis):
    x = np.random.default_rng(0).normal(size=(3, 4)).astype("float32")
    x[1] = 0.0
    fn = lambda v: F.normalize(v, p=p, axis=axis)                      # noqa: E731
    static = d2s.jit.to_static(fn, backend=backend)
    xt = d2s.to_tensor(x)
    xt.stop_gradient = False
    eager = fn(xt)
    np.testing.assert_allclose(eager.numpy(), reference(x, p, axis), rtol=1e-6, atol=1e-7)
    close(static(xt).numpy(), eager.numpy(), backend, "normalize")
    (eager * d2s.to_tensor(np.arange(12, dtype="float32").reshape(3, 4))).sum().backward()
    assert np.isfinite(xt.grad.numpy()).all()
