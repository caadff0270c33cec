"""Convolutions with `padding_mode` other than zeros, as applied models use
them: Informer / Autoformer's token embedding (a circular Conv1D over the
time axis), reflect-padded Conv2D in vocoders and image-to-image nets,
replicate padding at image borders. Each pads its input like PyTorch's
layer of the same mode (checked against torch with the same weights), and
converts with a `None` length on numpy and xla."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, t, train_and_compare

MODES = ["reflect", "replicate", "circular"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dims,padding", [(1, 1), (2, [1, 2]), (2, 1), (3, 1)])
def test_padding_modes_match_torch(mode, dims, padding):
    torch = pytest.importorskip("torch")
    layer = {1: nn.Conv1D, 2: nn.Conv2D, 3: nn.Conv3D}[dims](2, 3, 3, padding=padding,
                                                              padding_mode=mode)
    ref = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}[dims](
        2, 3, 3, padding=padding, padding_mode=mode)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(layer.weight.numpy()))
        ref.bias.copy_(torch.tensor(layer.bias.numpy()))
    x = np.random.default_rng(dims).normal(size=(2, 2) + (5, 6, 4)[:dims]).astype("float32")
    np.testing.assert_allclose(layer(t(x)).numpy(), ref(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


class TokenEmbedding(nn.Layer):
    """Informer's value embedding: a circular Conv1D along time, then a
    linear forecast of the next values from the embedded window."""

    def __init__(self, c_in=3, d_model=4):
        super().__init__()
        self.token_conv = nn.Conv1D(c_in, d_model, 3, padding=1, padding_mode="circular",
                                    bias_attr=False)
        self.head = nn.Linear(d_model, c_in)

    def forward(self, x, y):                                   # [B, L, C]
        emb = self.token_conv(x.transpose([0, 2, 1])).transpose([0, 2, 1])
        return F.mse_loss(self.head(F.gelu(emb)), y)


class ReflectRefiner(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(1, 2, 3, padding=1, padding_mode="reflect")
        self.out = nn.Conv2D(2, 1, 3, padding=1, padding_mode="replicate")

    def forward(self, x):
        return (self.out(F.relu(self.conv(x))) - x).abs().mean()


RNG = np.random.default_rng(31)


@pytest.mark.parametrize("backend", BACKENDS)
def test_circular_token_embedding_trains_like_eager(backend):
    batches = [(RNG.normal(size=(2, n, 3)), RNG.normal(size=(2, n, 3))) for n in (6, 6, 6)]
    spec = [InputSpec([None, None, 3]), InputSpec([None, None, 3])]
    train_and_compare(TokenEmbedding, batches, backend, spec, opt="adam")


@pytest.mark.parametrize("backend", BACKENDS)
def test_reflect_and_replicate_convs_train_like_eager(backend):
    batches = [(RNG.normal(size=(2, 1, 5, 6)),) for _ in range(3)]
    train_and_compare(ReflectRefiner, batches, backend, [InputSpec([None, 1, None, None])])


def test_padding_mode_needs_numeric_padding():
    with pytest.raises(ValueError, match="needs padding as an int"):
        nn.Conv1D(2, 2, 3, padding="same", padding_mode="circular")
