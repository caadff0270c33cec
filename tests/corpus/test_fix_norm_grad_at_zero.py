"""The gradient of `d2s.norm` (p=2 / 'fro') at a zero vector is 0, as in
PaddlePaddle and PyTorch, eagerly and converted on both backends. It was
`0 * inf = nan` eagerly and on numpy, but 0 on xla: the PointNet corpus
model's regulariser `||I - A A^T||`, exactly 0 at initialisation, made eager
and xla-converted training silently disagree (nan against finite weights)."""
import numpy as np
import pytest

import d2s

from harness import BACKENDS, close


def fro(a, b):
    return d2s.norm(a - b, axis=[1, 2]).sum() + d2s.norm(a, p="fro")


@pytest.mark.parametrize("backend", BACKENDS)
def test_norm_gradient_at_zero_is_zero_eager_and_static(backend):
    rng = np.random.default_rng(0)
    b = rng.normal(size=(3, 2, 2)).astype("float32")
    a = b.copy()
    a[1] += 1.0                       # rows 0 and 2 give a zero difference
    static = d2s.jit.to_static(fro, backend=backend)
    got = {}
    for name, fn in (("eager", fro), ("static", static)):
        x = d2s.to_tensor(a)
        x.stop_gradient = False
        out = fn(x, d2s.to_tensor(b))
        out.backward()
        got[name] = (out.numpy(), x.grad.numpy())
    loss, grad = got["eager"]
    assert np.isfinite(grad).all()
    # d/da ||a - b|| is (a - b) / ||a - b|| on row 1 and 0 on the zero rows;
    # d/da ||a|| is a / ||a||
    expect = a / np.linalg.norm(a)
    expect[1] += (a[1] - b[1]) / np.linalg.norm(a[1] - b[1])
    np.testing.assert_allclose(grad, expect, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(loss, np.linalg.norm(a) + np.linalg.norm(a[1] - b[1]), rtol=1e-6)
    close(got["static"][0], loss, backend, "loss")
    close(got["static"][1], grad, backend, "grad")
