"""`nn.Embedding(..., padding_idx=p)` / `F.embedding(x, w, padding_idx=p)`
(missing; PaddleNLP and torchvision-era text models pass it, found by the
built-in-transformer corpus model): pad ids look up zeros and the pad row
gets no gradient, as in PyTorch; eagerly and converted alike."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F

from harness import BACKENDS, close


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pad", [0, -1])
def test_padding_idx_gives_zeros_and_no_gradient(backend, pad):
    torch = None
    try:
        import torch
    except ImportError:
        pass
    emb = nn.Embedding(5, 3, padding_idx=pad)
    ids = np.array([[0, 2, 4], [4, 4, 1]])
    w = emb.weight.numpy().copy()
    row = pad % 5
    fn = d2s.jit.to_static(emb.forward, backend=backend)
    got = {}
    for name, call in (("eager", emb), ("static", fn)):
        out = call(d2s.to_tensor(ids))
        (out * d2s.to_tensor(np.arange(18, dtype="float32").reshape(2, 3, 3))).sum().backward()
        got[name] = (out.numpy(), emb.weight.grad.numpy().copy())
        emb.clear_gradients()
    out, grad = got["eager"]
    expected = np.where((ids == row)[..., None], 0.0, w[ids])
    np.testing.assert_array_equal(out, expected)
    assert (grad[row] == 0).all() and (grad[[r for r in range(5) if r != row]] != 0).any()
    if torch is not None:
        tw = torch.tensor(w, requires_grad=True)
        tout = torch.nn.functional.embedding(torch.tensor(ids), tw, padding_idx=row)
        (tout * torch.arange(18.0).reshape(2, 3, 3)).sum().backward()
        np.testing.assert_allclose(grad, tw.grad.numpy(), rtol=1e-6)
    close(got["static"][0], out, backend, "output")
    close(got["static"][1], grad, backend, "grad")
    assert F.embedding(d2s.to_tensor(ids), emb.weight).numpy()[0, 0].any()   # no pad: a lookup


def test_padding_idx_out_of_range_is_a_clear_error():
    with pytest.raises(ValueError, match="padding_idx 7 is outside the 5 rows"):
        nn.Embedding(5, 3, padding_idx=7)(d2s.to_tensor(np.array([1])))
