"""F.feature_alpha_dropout / FeatureAlphaDropout: whole (sample, channel)
maps are kept (as a*x + b) or replaced (by a*alpha' + b) with a and b from
PyTorch's formula; the kept fraction is about 1 - p; eval mode and p=0 are
the identity; gradients are a on kept maps, 0 on dropped ones; a converted
training step draws as eager does (numpy, xla: same structure)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static

ALPHA = -1.6732632423543772 * 1.0507009873554805


def _ab(p):
    a = ((1 - p) * (1 + p * ALPHA ** 2)) ** -0.5
    return a, -a * ALPHA * p


def _check_structure(x, y, p):
    a, b = _ab(p)
    kept = np.isclose(y, a * x + b, rtol=1e-6).all(axis=(2, 3))
    dropped = np.isclose(y, a * ALPHA + b, rtol=1e-6).all(axis=(2, 3))
    assert np.all(kept ^ dropped)
    return kept


def test_channels_are_kept_or_dropped_whole_with_the_affine_correction():
    d2s.seed(1)
    x = np.random.default_rng(0).standard_normal((40, 30, 2, 3))
    xd = d2s.to_tensor(x, stop_gradient=False)
    y = F.feature_alpha_dropout(xd, 0.3, training=True)
    kept = _check_structure(x, y.numpy(), 0.3)
    assert abs(kept.mean() - 0.7) < 0.06
    y.sum().backward()
    a, _ = _ab(0.3)
    np.testing.assert_allclose(xd.grad.numpy(), np.broadcast_to(
        (kept * a)[:, :, None, None], x.shape), rtol=1e-12)


def test_identity_when_not_training_and_errors():
    x = d2s.to_tensor(np.ones((2, 3, 4)))
    layer = nn.FeatureAlphaDropout(0.5)
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy())
    np.testing.assert_array_equal(F.feature_alpha_dropout(x, 0.0).numpy(), x.numpy())
    with pytest.raises(ValueError, match="p must be"):
        F.feature_alpha_dropout(x, 1.5)


def test_matches_torch_statistics():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    x = np.random.default_rng(2).standard_normal((30, 40, 2, 2))
    yt = torch.nn.functional.feature_alpha_dropout(torch.tensor(x), 0.25, True).numpy()
    _check_structure(x, yt, 0.25)  # the same a, b as ours


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_training_call(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    layer = nn.FeatureAlphaDropout(0.4)
    x = np.random.default_rng(3).standard_normal((6, 5, 2, 2)).astype(np.float32)
    fn = to_static(lambda t: layer(t), backend=backend)
    d2s.seed(4)
    y1 = fn(d2s.to_tensor(x)).numpy()
    y2 = fn(d2s.to_tensor(x)).numpy()
    _check_structure(x, y1, 0.4)
    _check_structure(x, y2, 0.4)
    assert not np.array_equal(y1, y2)  # drawn afresh on every run
