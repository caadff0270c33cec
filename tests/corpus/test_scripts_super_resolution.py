"""The super-resolution example script (ESPCN: three convolutions and a
`PixelShuffle`) ported to Paddle names: weights set in
`_initialize_weights` by calling an initializer on each parameter
(`init(conv.weight)`, Paddle's in-place form), Adam, an MSE train step, a
PSNR evaluation summed with `math.log10(1 / mse.item())` under `no_grad`,
and `jit.save` / `jit.load` of the model converted with an InputSpec whose
batch and spatial dims are `None`. Eager and converted agree on numpy and
xla, for the model converted and for the train step converted."""
import math

import numpy as np
import pytest

import d2s as paddle
import d2s.nn as nn
from d2s.static import InputSpec

from harness import BACKENDS, save_load_infer, t

SPEC = [InputSpec([None, 1, None, None], "float32", name="x")]


class Net(nn.Layer):
    def __init__(self, upscale_factor=2):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2D(1, 6, 5, 1, 2)
        self.conv2 = nn.Conv2D(6, 6, 3, 1, 1)
        self.conv3 = nn.Conv2D(6, upscale_factor ** 2, 3, 1, 1)
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        return self.pixel_shuffle(self.conv3(x))

    def _initialize_weights(self):
        init = nn.initializer.KaimingNormal()
        for conv in (self.conv1, self.conv2):
            init(conv.weight)
        nn.initializer.XavierUniform()(self.conv3.weight)


def script(backend, how):
    paddle.seed(0)
    model = Net()
    if how == "model":
        model = paddle.jit.to_static(model, input_spec=SPEC, backend=backend)
    criterion = nn.MSELoss()
    opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())

    def train_step(inp, target):
        opt.clear_grad()
        loss = criterion(model(inp), target)
        loss.backward()
        opt.step()
        return loss

    if how == "step":
        train_step = paddle.jit.to_static(train_step, backend=backend)
    rng = np.random.RandomState(0)
    record = []
    for hw in (4, 4, 5):
        loss = train_step(t(rng.rand(2, 1, hw, hw)), t(rng.rand(2, 1, 2 * hw, 2 * hw)))
        record.append(loss.numpy())
    avg_psnr = 0.0
    model.eval()
    with paddle.no_grad():
        for hw in (3, 6):
            mse = criterion(model(t(rng.rand(1, 1, hw, hw))), t(rng.rand(1, 1, 2 * hw, 2 * hw)))
            avg_psnr += 10 * math.log10(1 / mse.item())
    return record + [avg_psnr / 2] + [p.numpy() for p in model.parameters()], model


def test_initializer_called_on_a_parameter_fills_it_in_place():
    paddle.seed(3)
    conv = nn.Conv2D(2, 3, 3)
    weight = conv.weight
    assert nn.initializer.Constant(0.5)(conv.weight) is weight
    np.testing.assert_array_equal(conv.weight.numpy(), np.full((3, 2, 3, 3), 0.5, "float32"))
    paddle.seed(4)
    expected = nn.initializer.KaimingNormal()([3, 2, 3, 3]).numpy()
    paddle.seed(4)
    nn.initializer.KaimingNormal()(conv.weight)
    np.testing.assert_array_equal(conv.weight.numpy(), expected)
    assert not conv.weight.stop_gradient


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", ["model", "step"])
def test_super_resolution_script_matches_eager(backend, how):
    expected, _ = script(backend, "eager")
    actual, _ = script(backend, how)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6, err_msg=f"record {i}")


def test_super_resolution_save_load(tmp_path):
    _, model = script("numpy", "model")
    x = t(np.random.RandomState(1).rand(2, 1, 7, 5))
    loaded = save_load_infer(model, SPEC, [x], tmp_path)
    assert list(loaded(x).shape) == [2, 1, 14, 10]


def test_super_resolution_onnx_export_with_a_path_prefix(tmp_path):
    """`paddle.onnx.export(model, "out/srnet", input_spec)` writes
    `out/srnet.onnx`, as PaddlePaddle does; ONNX Runtime gives the eager
    output at two image sizes (the spatial dims are symbolic)."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    paddle.seed(0)
    model = Net()
    model.eval()
    written = paddle.onnx.export(model, str(tmp_path / "srnet"), input_spec=SPEC)
    assert written == str(tmp_path / "srnet.onnx")
    session = ort.InferenceSession(written)
    for hw in ((5, 6), (3, 3)):
        x = np.random.RandomState(hw[0]).rand(2, 1, *hw).astype("float32")
        got = session.run(None, {session.get_inputs()[0].name: x})[0]
        np.testing.assert_allclose(got, model(t(x)).numpy(), rtol=1e-5, atol=1e-6)
