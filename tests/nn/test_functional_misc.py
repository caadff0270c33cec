"""pad / Pad2D, interpolate / Upsample, one_hot, label_smooth, cosine_similarity,
sequence_mask and scaled_dot_product_attention against PyTorch or numpy,
with gradients, and on the xla backend."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static

RNG = np.random.default_rng(5)


def _grad_check(torch, ours, theirs, *arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ds = [d2s.to_tensor(a, stop_gradient=False) for a in arrays]
    want, got = theirs(*ts), ours(*ds)
    w = np.cos(np.arange(want.numel())).reshape(tuple(want.shape))
    (want * torch.tensor(w)).sum().backward()
    (got * d2s.to_tensor(w)).sum().backward()
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    for d, t in zip(ds, ts):
        np.testing.assert_allclose(d.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_matches_torch(mode):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 4, 5))
    _grad_check(torch, lambda v: F.pad(v, [1, 2, 2, 0], mode=mode, value=0.5),
                lambda v: torch.nn.functional.pad(v, (1, 2, 2, 0), mode=mode,
                                                  **({"value": 0.5} if mode == "constant"
                                                     else {})), x)
    layer = nn.Pad2D([1, 2, 2, 0], mode=mode, value=0.5)
    assert layer(d2s.to_tensor(x)).shape == (2, 3, 6, 8)


def test_pad_every_dim_and_channel_last():
    x = np.arange(6.0).reshape(2, 3)
    got = F.pad(d2s.to_tensor(x), [1, 0, 0, 2], value=-1.0).numpy()
    np.testing.assert_array_equal(got, np.pad(x, ((1, 0), (0, 2)), constant_values=-1.0))
    y = RNG.standard_normal((1, 4, 5, 2))
    got = F.pad(d2s.to_tensor(y), [1, 1, 2, 0], mode="replicate", data_format="NHWC").numpy()
    np.testing.assert_array_equal(got, np.pad(y, ((0, 0), (2, 0), (1, 1), (0, 0)), mode="edge"))
    with pytest.raises(ValueError, match="smaller than the dim"):
        F.pad(d2s.to_tensor(y), [0, 0, 4, 0], mode="reflect", data_format="NHWC")


@pytest.mark.parametrize("kw", [dict(size=[7, 3], mode="nearest"),
                                dict(scale_factor=2, mode="nearest"),
                                dict(size=[7, 9], mode="bilinear"),
                                dict(size=[3, 4], mode="bilinear", align_corners=True),
                                dict(scale_factor=2, mode="bilinear")])
def test_interpolate_matches_torch(kw):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 5, 6))
    tkw = dict(kw)
    _grad_check(torch, lambda v: F.interpolate(v, **kw),
                lambda v: torch.nn.functional.interpolate(v, **tkw), x)


def test_upsample_layers_and_xla(monkeypatch):
    pytest.importorskip("jax")
    monkeypatch.setenv("D2S_XLA_SYNC", "1")
    x = d2s.to_tensor(RNG.standard_normal((1, 2, 3, 4)).astype(np.float32))
    up = nn.Upsample(scale_factor=2, mode="bilinear")
    assert up(x).shape == (1, 2, 6, 8)
    assert nn.UpsamplingNearest2D(size=[5, 5])(x).shape == (1, 2, 5, 5)
    for fn in (up.forward, lambda v: F.pad(v, [1, 1, 1, 1], mode="reflect")):
        np.testing.assert_allclose(to_static(fn, backend="xla")(x).numpy(), fn(x).numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_small_functions_against_numpy():
    ids = np.array([[0, 2], [1, 1]])
    oh = F.one_hot(d2s.to_tensor(ids), 3).numpy()
    assert oh.dtype == np.float32 and oh.tolist() == np.eye(3)[ids].tolist()
    lab = np.eye(4)[[0, 3]]
    np.testing.assert_allclose(F.label_smooth(d2s.to_tensor(lab), epsilon=0.2).numpy(),
                               lab * 0.8 + 0.05)
    a, b = RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5))
    np.testing.assert_allclose(F.cosine_similarity(d2s.to_tensor(a), d2s.to_tensor(b)).numpy(),
                               (a * b).sum(1) / np.linalg.norm(a, axis=1)
                               / np.linalg.norm(b, axis=1), rtol=1e-12)
    m = F.sequence_mask(d2s.to_tensor(np.array([1, 3, 0])), dtype="bool").numpy()
    assert m.tolist() == [[True, False, False], [True, True, True], [False, False, False]]
    assert F.sequence_mask(d2s.to_tensor(np.array([2])), maxlen=4).numpy().tolist() == \
        [[1, 1, 0, 0]]


@pytest.mark.parametrize("causal", [False, True])
def test_scaled_dot_product_attention_matches_torch(causal):
    torch = pytest.importorskip("torch")
    q, k, v = (RNG.standard_normal((2, 4, 3, 5)) for _ in range(3))

    def theirs(q, k, v):  # torch's layout is (batch, heads, seq, dim)
        out = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal)
        return out.transpose(1, 2)
    _grad_check(torch, lambda q, k, v: F.scaled_dot_product_attention(q, k, v,
                                                                      is_causal=causal),
                theirs, q, k, v)
    mask = RNG.random((4, 4)) > 0.3
    np.fill_diagonal(mask, True)
    got = F.scaled_dot_product_attention(*(d2s.to_tensor(t) for t in (q, k, v)),
                                         attn_mask=d2s.to_tensor(mask)).numpy()
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(t).transpose(1, 2) for t in (q, k, v)),
        attn_mask=torch.tensor(mask)).transpose(1, 2).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10)
