"""`paddle.nn.utils.weight_norm` as PaddleSpeech's vocoders (HiFiGAN /
Parallel WaveGAN residual blocks) and PaddleGAN write it: each Conv1D's
weight reparameterized as `g * v / ||v||`, trained, converted, saved.

Expected values and gradients of g and v from PyTorch's weight_norm; eager
and converted training steps agree on numpy and xla; save -> load ->
infer gives the eager output; remove_weight_norm folds it back."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.nn.utils import remove_weight_norm, weight_norm
from d2s.static import InputSpec

from harness import BACKENDS, save_load_infer, train_and_compare


class ResBlock(nn.Layer):
    def __init__(self):
        super().__init__()
        self.convs = nn.LayerList([weight_norm(nn.Conv1D(3, 3, 3, padding=d, dilation=d))
                                   for d in (1, 2)])
        self.post = weight_norm(nn.Linear(3, 2), dim=None)

    def forward(self, x):
        for conv in self.convs:
            x = x + conv(F.leaky_relu(x, 0.1))
        return self.post(x.transpose([0, 2, 1]))


def test_values_and_gradients_match_torch():
    torch = pytest.importorskip("torch")
    d2s.seed(0)
    conv = nn.Conv1D(3, 4, 3)
    w0, b0 = conv.weight.numpy().copy(), conv.bias.numpy().copy()
    weight_norm(conv)
    assert sorted(n for n, _ in conv.named_parameters()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(conv.weight.numpy(), w0, rtol=1e-6)
    x = np.random.default_rng(0).normal(size=(2, 3, 6)).astype("float32")
    out = conv(d2s.to_tensor(x))
    (out * out).sum().backward()
    ref = torch.nn.Conv1d(3, 4, 3)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(w0))
        ref.bias.copy_(torch.tensor(b0))
    ref = torch.nn.utils.weight_norm(ref)
    t_out = ref(torch.tensor(x))
    (t_out * t_out).sum().backward()
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(conv.weight_g.grad.numpy(), ref.weight_g.grad.numpy().reshape(-1),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(conv.weight_v.grad.numpy(), ref.weight_v.grad.numpy(),
                               rtol=1e-4, atol=1e-5)
    folded = conv.weight.numpy()
    remove_weight_norm(conv)
    assert sorted(n for n, _ in conv.named_parameters()) == ["bias", "weight"]
    np.testing.assert_allclose(conv.weight.numpy(), folded)
    with pytest.raises(ValueError, match="is not weight-normalized"):
        remove_weight_norm(conv)


@pytest.mark.parametrize("backend", BACKENDS)
def test_weight_normalized_block_trains_like_eager(backend, tmp_path):
    rng = np.random.default_rng(1)
    batches = [(rng.normal(size=(2, 3, 7)).astype("float32"),) for _ in range(3)]
    spec = [InputSpec([None, 3, None], "float32")]
    _, model, _ = train_and_compare(ResBlock, batches, backend, input_spec=spec,
                                    loss=lambda out, x: (out * out).mean())
    if backend == "numpy":
        save_load_infer(model, spec, [d2s.to_tensor(batches[0][0])], tmp_path)
