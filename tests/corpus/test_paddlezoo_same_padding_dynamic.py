"""`padding='same'` convolutions under an InputSpec's `None` spatial dims, as
PaddleSpeech's conformer convolution module (`nn.Conv1D(..., padding='same',
data_format='NLC')` over a variable number of frames) and PaddleOCR's
backbones write them.

With stride 1 'SAME' pads d * (k - 1) whatever the size (it raised "needs
the spatial dims known"): eager and converted agree on values and gradients,
on numpy and xla, at several lengths. With a larger stride a convolution
or pooling resolves the padding per run (test_scripts_image_segmentation);
a max pooling returning its mask needs the size: the error says so and
what to write."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.static import InputSpec

from harness import BACKENDS


class ConformerConv(nn.Layer):
    def __init__(self):
        super().__init__()
        self.depthwise = nn.Conv1D(4, 4, 5, padding="same", groups=4, data_format="NLC")
        self.pointwise = nn.Conv1D(4, 4, 4, padding="SAME", dilation=2, data_format="NLC")
        self.image = nn.Conv2D(1, 2, (3, 4), padding="same")

    def forward(self, frames):
        h = self.pointwise(nn.functional.silu(self.depthwise(frames)))
        return h, self.image(h.unsqueeze(1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_padding_of_run_time_lengths_matches_eager(backend):
    d2s.seed(0)
    eager = ConformerConv()
    model = ConformerConv()
    model.set_state_dict(eager.state_dict())
    static = d2s.jit.to_static(model.forward, backend=backend,
                               input_spec=[InputSpec([None, None, 4], "float32")])
    rng = np.random.default_rng(0)
    for length in (5, 8):
        frames = rng.normal(size=(2, length, 4)).astype("float32")
        results = []
        for fn, layer in ((eager, eager), (static, model)):
            x = d2s.to_tensor(frames, stop_gradient=False)
            h, img = fn(x)
            assert tuple(h.shape) == (2, length, 4) and tuple(img.shape) == (2, 2, length, 4)
            ((h * h).sum() + (img * img).sum()).backward()
            results.append((h.numpy(), img.numpy(), x.grad.numpy(),
                            layer.pointwise.weight.grad.numpy()))
            layer.clear_gradients()
        for s, e in zip(results[1], results[0]):
            np.testing.assert_allclose(s, e, rtol=1e-5, atol=1e-5)


def test_strided_same_pooling_with_a_mask_of_an_unknown_dim_says_what_to_write():
    """(A strided 'SAME' convolution or pooling of an unknown dim works: see
    test_scripts_image_segmentation; a pooling returning its argmax mask
    still needs the size.)"""
    pool = nn.MaxPool1D(3, stride=2, padding="same", return_mask=True)
    static = d2s.jit.to_static(pool, input_spec=[InputSpec([None, 2, None])])
    with pytest.raises(ValueError, match=r"padding='SAME' with stride 2 needs the spatial dims "
                                         r"known.*Give those dims a size in the InputSpec, or "
                                         r"give the padding as ints"):
        static(d2s.ones([1, 2, 6]))
