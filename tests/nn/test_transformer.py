"""MultiHeadAttention and the Transformer layers against PyTorch on the same
weights (masks, normalize_before, cross-attention), incremental decoding with
caches against the full pass, and a converted encoder on numpy and xla."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static

RNG = np.random.default_rng(12)
B, L, S, E, NH = 2, 4, 5, 8, 2


def _f64(layer):
    return layer.astype("float64")


def _load_mha(torch, ours, theirs):
    w = [ours.q_proj, ours.k_proj, ours.v_proj]
    theirs.in_proj_weight.data = torch.tensor(np.concatenate([p.weight.numpy().T for p in w]))
    theirs.in_proj_bias.data = torch.tensor(np.concatenate([p.bias.numpy() for p in w]))
    theirs.out_proj.weight.data = torch.tensor(ours.out_proj.weight.numpy().T.copy())
    theirs.out_proj.bias.data = torch.tensor(ours.out_proj.bias.numpy())


def _load_linear(torch, ours, theirs):
    theirs.weight.data = torch.tensor(ours.weight.numpy().T.copy())
    theirs.bias.data = torch.tensor(ours.bias.numpy())


def _load_norm(torch, ours, theirs):
    theirs.weight.data = torch.tensor(ours.weight.numpy())
    theirs.bias.data = torch.tensor(ours.bias.numpy())


@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
def test_multi_head_attention_matches_torch(mask_kind):
    torch = pytest.importorskip("torch")
    d2s.seed(0)
    ours = _f64(nn.MultiHeadAttention(E, NH, need_weights=True))
    theirs = torch.nn.MultiheadAttention(E, NH, batch_first=True).double()
    _load_mha(torch, ours, theirs)
    q, kv = RNG.standard_normal((B, L, E)), RNG.standard_normal((B, S, E))
    keep = RNG.random((L, S)) > 0.3
    keep[:, 0] = True
    mask_d = {None: None, "bool": keep, "float": np.where(keep, 0.0, -1e4)}[mask_kind]
    # torch: a True bool mask position is NOT attended (Paddle's opposite)
    mask_t = {None: None, "bool": torch.tensor(~keep),
              "float": torch.tensor(np.where(keep, 0.0, -1e4))}[mask_kind]
    qt, kt = torch.tensor(q, requires_grad=True), torch.tensor(kv, requires_grad=True)
    want, want_w = theirs(qt, kt, kt, attn_mask=mask_t, average_attn_weights=False)
    qd, kd = d2s.to_tensor(q, stop_gradient=False), d2s.to_tensor(kv, stop_gradient=False)
    got, got_w = ours(qd, kd, kd, None if mask_d is None else d2s.to_tensor(mask_d))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_w.numpy(), want_w.detach().numpy(), rtol=1e-9, atol=1e-12)
    g = RNG.standard_normal(got.shape)
    (want * torch.tensor(g)).sum().backward()
    (got * d2s.to_tensor(g)).sum().backward()
    np.testing.assert_allclose(qd.grad.numpy(), qt.grad.numpy(), rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(kd.grad.numpy(), kt.grad.numpy(), rtol=1e-8, atol=1e-11)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor:UserWarning")  # torch's note
@pytest.mark.parametrize("normalize_before", [False, True])
def test_transformer_layers_match_torch(normalize_before):
    torch = pytest.importorskip("torch")
    d2s.seed(1)
    model = _f64(nn.Transformer(E, NH, 2, 2, 16, dropout=0.0,
                                normalize_before=normalize_before))
    model.eval()
    theirs = torch.nn.Transformer(E, NH, 2, 2, 16, dropout=0.0, batch_first=True,
                                  norm_first=normalize_before).double().eval()
    for ol, tl in zip(model.encoder.layers, theirs.encoder.layers):
        _load_mha(torch, ol.self_attn, tl.self_attn)
        _load_linear(torch, ol.linear1, tl.linear1)
        _load_linear(torch, ol.linear2, tl.linear2)
        _load_norm(torch, ol.norm1, tl.norm1)
        _load_norm(torch, ol.norm2, tl.norm2)
    for ol, tl in zip(model.decoder.layers, theirs.decoder.layers):
        _load_mha(torch, ol.self_attn, tl.self_attn)
        _load_mha(torch, ol.cross_attn, tl.multihead_attn)
        _load_linear(torch, ol.linear1, tl.linear1)
        _load_linear(torch, ol.linear2, tl.linear2)
        for k in (1, 2, 3):
            _load_norm(torch, getattr(ol, f"norm{k}"), getattr(tl, f"norm{k}"))
    _load_norm(torch, model.encoder.norm, theirs.encoder.norm)
    _load_norm(torch, model.decoder.norm, theirs.decoder.norm)
    src, tgt = RNG.standard_normal((B, S, E)), RNG.standard_normal((B, L, E))
    causal = nn.Transformer.generate_square_subsequent_mask(L)
    want = theirs(torch.tensor(src), torch.tensor(tgt),
                  tgt_mask=torch.tensor(causal.numpy().astype(np.float64)))
    got = model(d2s.to_tensor(src), d2s.to_tensor(tgt), tgt_mask=causal.astype("float64"))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-8, atol=1e-10)


def test_incremental_decoding_with_caches_equals_the_full_pass():
    d2s.seed(2)
    layer = _f64(nn.TransformerDecoderLayer(E, NH, 16, dropout=0.0))
    decoder = nn.TransformerDecoder(layer, 2)
    decoder.eval()
    memory = d2s.to_tensor(RNG.standard_normal((B, S, E)))
    tgt = RNG.standard_normal((B, L, E))
    causal = nn.Transformer.generate_square_subsequent_mask(L).astype("float64")
    full = decoder(d2s.to_tensor(tgt), memory, tgt_mask=causal).numpy()
    cache = decoder.gen_cache(memory)
    steps = []
    for t in range(L):
        out, cache = decoder(d2s.to_tensor(tgt[:, t:t + 1]), memory, cache=cache)
        steps.append(out.numpy())
    np.testing.assert_allclose(np.concatenate(steps, 1), full, rtol=1e-10, atol=1e-12)
    assert cache[0][0].k.shape == (B, NH, L, E // NH)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_encoder_equals_eager(backend, monkeypatch):
    if backend == "xla":
        pytest.importorskip("jax")
        monkeypatch.setenv("D2S_XLA_SYNC", "1")
    d2s.seed(3)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, NH, 16, dropout=0.0), 2)
    assert len(enc.parameters()) == 2 * len(enc.layers[0].parameters())
    assert not np.array_equal(enc.layers[0].linear1.weight.numpy(),
                              enc.layers[1].linear1.weight.numpy())
    x = d2s.to_tensor(RNG.standard_normal((B, S, E)).astype(np.float32))
    mask = d2s.to_tensor(np.tril(np.ones((S, S), bool)))
    want = enc(x, mask).numpy()
    got = to_static(enc.forward, backend=backend)(x, mask).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="multiple of num_heads"):
        nn.MultiHeadAttention(6, 4)
