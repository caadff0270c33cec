"""SimpleRNN / LSTM / GRU and their cells against PyTorch on the same weights
(outputs, final states, gradients; stacked, bidirectional, sequence_length),
Paddle's parameter names, and a converted forward on numpy and xla."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static

RNG = np.random.default_rng(9)
B, T, I, H = 3, 5, 4, 6


def _copy_weights(ours, theirs, torch, layers, dirs):
    """Paddle's parameters (`0.cell.weight_ih` / `0.cell_fw...`) into torch's
    (`weight_ih_l0` / `..._reverse`)."""
    sd = ours.state_dict()
    for layer in range(layers):
        for d in range(dirs):
            cell = "cell" if dirs == 1 else ("cell_fw", "cell_bw")[d]
            suffix = f"l{layer}" + ("_reverse" if d else "")
            for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(theirs, f"{kind}_{suffix}").data = torch.tensor(
                    sd[f"{layer}.{cell}.{kind}"].numpy())


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "SimpleRNN"])
@pytest.mark.parametrize("layers,direction", [(1, "forward"), (2, "bidirect")])
@pytest.mark.parametrize("lengths", [None, [5, 2, 3]])
def test_recurrent_layers_match_torch(kind, layers, direction, lengths):
    torch = pytest.importorskip("torch")
    d2s.seed(0)
    ours = getattr(nn, kind)(I, H, num_layers=layers, direction=direction).astype("float64")
    dirs = 2 if direction == "bidirect" else 1
    theirs = getattr(torch.nn, {"SimpleRNN": "RNN"}.get(kind, kind))(
        I, H, num_layers=layers, bidirectional=dirs == 2, batch_first=True).double()
    _copy_weights(ours, theirs, torch, layers, dirs)
    x = RNG.standard_normal((B, T, I))
    h0 = RNG.standard_normal((layers * dirs, B, H))
    c0 = RNG.standard_normal((layers * dirs, B, H))
    xt = torch.tensor(x, requires_grad=True)
    init_t = (torch.tensor(h0), torch.tensor(c0)) if kind == "LSTM" else torch.tensor(h0)
    if lengths is None:
        out_t, fin_t = theirs(xt, init_t)
    else:
        packed = torch.nn.utils.rnn.pack_padded_sequence(xt, torch.tensor(lengths),
                                                         batch_first=True,
                                                         enforce_sorted=False)
        out_p, fin_t = theirs(packed, init_t)
        out_t, _ = torch.nn.utils.rnn.pad_packed_sequence(out_p, batch_first=True,
                                                          total_length=T)
    xd = d2s.to_tensor(x, stop_gradient=False)
    init_d = ((d2s.to_tensor(h0), d2s.to_tensor(c0)) if kind == "LSTM"
              else d2s.to_tensor(h0))
    seq = None if lengths is None else d2s.to_tensor(np.array(lengths))
    out_d, fin_d = ours(xd, init_d, seq)
    np.testing.assert_allclose(out_d.numpy(), out_t.detach().numpy(), rtol=1e-9, atol=1e-12)
    fins = zip(fin_d, fin_t) if kind == "LSTM" else [(fin_d, fin_t)]
    for a, b in fins:
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-12)
    w = np.cos(np.arange(out_d.numpy().size)).reshape(out_d.shape)
    (out_t * torch.tensor(w)).sum().backward()
    (out_d * d2s.to_tensor(w)).sum().backward()
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(ours.state_dict()["0." + ("cell" if dirs == 1 else "cell_fw")
                                                  + ".weight_hh"].grad.numpy(),
                               theirs.weight_hh_l0.grad.numpy(), rtol=1e-8, atol=1e-11)


def test_cells_names_shapes_and_init():
    d2s.seed(1)
    cell = nn.LSTMCell(I, H)
    assert [n for n, _ in cell.named_parameters()] == ["weight_ih", "weight_hh", "bias_ih",
                                                      "bias_hh"]
    assert cell.weight_ih.shape == (4 * H, I) and nn.GRUCell(I, H).weight_hh.shape == (3 * H, H)
    assert np.abs(cell.weight_ih.numpy()).max() <= 1 / np.sqrt(H)
    x = d2s.to_tensor(RNG.standard_normal((B, I)).astype(np.float32))
    h, (h2, c) = cell(x)
    assert h.shape == c.shape == (B, H) and h is h2
    out, h = nn.GRUCell(I, H)(x)
    assert out.shape == (B, H)
    with pytest.raises(ValueError, match=r"expects inputs \(batch, 4\)"):
        cell(d2s.to_tensor(np.zeros((B, 5), np.float32)))
    lstm = nn.LSTM(I, H, 2, direction="bidirect")
    assert "1.cell_bw.bias_hh" in lstm.state_dict()


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_lstm_forward_and_gradients_equal_eager(backend, monkeypatch):
    if backend == "xla":
        pytest.importorskip("jax")
        monkeypatch.setenv("D2S_XLA_SYNC", "1")
    d2s.seed(2)
    model = nn.LSTM(I, H, num_layers=2)
    x = RNG.standard_normal((B, T, I)).astype(np.float32)

    def run(fn):
        for p in model.parameters():
            p.clear_grad()
        out, (h, c) = fn(d2s.to_tensor(x))
        (out.sum() + h.sum()).backward()
        return out.numpy(), [p.grad.numpy() for p in model.parameters()]
    want, want_g = run(model)
    got, got_g = run(to_static(model.forward, backend=backend))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
