"""The image-segmentation tutorial (an Xception-style encoder/decoder for a
pets dataset) ported small: a stride-2 `Conv2D(..., padding="same")` stem,
depthwise-separable convolutions, `Conv2DTranspose`, `nn.Upsample`, residual
1x1 convolutions, RMSProp, `F.cross_entropy(logits, label, axis=1,
ignore_index=255)` over NCHW logits, and `argmax(axis=1)` masks. Converted
with an InputSpec whose height and width are `None` — the strided 'SAME'
convolution (and the 'SAME' pooling) then resolves its padding per run
(nn.same_conv_unknown) —
trained on images of two sizes, eager and converted agree (values and
gradients) on numpy and xla; the model saves, loads and exports to ONNX
for any size (the nearest upsampling of run-time sizes is a gather)."""
import numpy as np
import pytest

import d2s as paddle
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, save_load_infer, t

SPEC = [InputSpec([None, 3, None, None], "float32")]


class SeparableConv2D(nn.Layer):
    def __init__(self, cin, cout):
        super().__init__()
        self.depthwise = nn.Conv2D(cin, cin, 3, padding=1, groups=cin)
        self.pointwise = nn.Conv2D(cin, cout, 1)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


class Encoder(nn.Layer):
    def __init__(self, cin, cout):
        super().__init__()
        self.sep = SeparableConv2D(cin, cout)
        self.bn = nn.BatchNorm2D(cout)
        self.pool = nn.MaxPool2D(3, 2, 1)
        self.residual = nn.Conv2D(cin, cout, 1, 2, padding="same")

    def forward(self, x):
        return self.pool(self.bn(self.sep(F.relu(x)))) + self.residual(x)


class Decoder(nn.Layer):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.Conv2DTranspose(cin, cout, 3, padding=1)
        self.bn = nn.BatchNorm2D(cout)
        self.upsample = nn.Upsample(scale_factor=2.0)
        self.residual = nn.Conv2D(cin, cout, 1)

    def forward(self, x):
        y = self.upsample(self.bn(self.up(F.relu(x))))
        return y + self.residual(self.upsample(x))


class PetNet(nn.Layer):
    def __init__(self, num_classes=3):
        super().__init__()
        self.stem = nn.Conv2D(3, 4, 3, stride=2, padding="same")
        self.bn = nn.BatchNorm2D(4)
        self.enc = Encoder(4, 6)
        self.dec1 = Decoder(6, 4)
        self.dec2 = Decoder(4, 4)
        self.head = nn.Conv2D(4, num_classes, 3, padding="same")

    def forward(self, x):
        y = self.enc(F.relu(self.bn(self.stem(x))))
        return self.head(self.dec2(self.dec1(y)))


def script(backend, convert):
    paddle.seed(0)
    model = PetNet()
    if convert:
        model = paddle.jit.to_static(model, input_spec=SPEC, backend=backend)
    opt = paddle.optimizer.RMSProp(learning_rate=0.01, parameters=model.parameters())
    rng = np.random.RandomState(0)
    record = []
    for b, hw in ((2, 8), (1, 12), (2, 8)):
        x = t(rng.rand(b, 3, hw, hw))
        label = rng.randint(0, 3, (b, 1, hw, hw))
        label[:, :, :2] = 255                           # unlabelled border
        loss = F.cross_entropy(model(x), t(label), axis=1, ignore_index=255)
        loss.backward()
        record += [loss.numpy()] + [p.grad.numpy() for p in model.parameters()]
        opt.step()
        opt.clear_grad()
    model.eval()
    with paddle.no_grad():
        pred = model(t(rng.rand(1, 3, 16, 16)))
    record += [pred.numpy(), paddle.argmax(pred, axis=1).numpy()]
    return record + [v.numpy() for v in model.state_dict().values()], model


@pytest.mark.parametrize("backend", BACKENDS)
def test_segmentation_script_with_unknown_image_size_matches_eager(backend):
    expected, _ = script(backend, False)
    actual, _ = script(backend, True)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-5, err_msg=f"record {i}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kernel,stride,dilation", [(4, 2, 1), (3, 3, 2)])
def test_strided_same_convolution_of_unknown_dims(backend, kernel, stride, dilation):
    """Sizes of every residue modulo the stride (and each residue's own
    padding): the output and both gradients of eager `Conv2D(padding="same")`."""
    paddle.seed(1)
    conv = nn.Conv2D(2, 3, kernel, stride=stride, padding="same", dilation=dilation)
    static = paddle.jit.to_static(conv, input_spec=[InputSpec([None, 2, None, None])],
                                  backend=backend)
    for h, w in ((7, 8), (6, 4)):
        results = []
        for f in (conv, static):
            x = paddle.to_tensor(np.random.RandomState(h * w).randn(2, 2, h, w).astype("float32"),
                                 stop_gradient=False)
            out = f(x)
            (out * out).sum().backward()
            results.append((out.numpy(), x.grad.numpy(), conv.weight.grad.numpy()))
            conv.clear_gradients()
        assert results[1][0].shape == results[0][0].shape == (2, 3, -(-h // stride),
                                                              -(-w // stride))
        for a, e in zip(results[1], results[0]):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pool", [nn.MaxPool2D(3, 2, padding="same"),
                                  nn.AvgPool1D(3, 2, padding="same", exclusive=False)],
                         ids=["max", "avg_1d_inclusive"])
def test_strided_same_pooling_of_unknown_dims(backend, pool):
    nd = 3 if isinstance(pool, nn.AvgPool1D) else 4
    static = paddle.jit.to_static(pool, input_spec=[InputSpec([None, 2] + [None] * (nd - 2))],
                                  backend=backend)
    for hw in ((7, 8), (6, 4)):
        results = []
        for f in (pool, static):
            x = paddle.to_tensor(np.random.RandomState(7).randn(2, 2, *hw[:nd - 2])
                                 .astype("float32"), stop_gradient=False)
            out = f(x)
            (out * out).sum().backward()
            results.append((out.numpy(), x.grad.numpy()))
        for a, e in zip(results[1], results[0]):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


def test_segmentation_model_saves_and_exports_for_any_size(tmp_path):
    _, model = script("numpy", True)
    x = t(np.random.RandomState(3).rand(1, 3, 10, 14))
    loaded = save_load_infer(model, SPEC, [x], tmp_path)
    assert list(loaded(x).shape) == [1, 3, 12, 16]   # stride 4 down (ceil), 4 up
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    path = paddle.onnx.export(model, str(tmp_path / "petnet"), input_spec=SPEC)
    session = ort.InferenceSession(path)
    for hw in ((10, 14), (9, 7)):
        image = np.random.RandomState(hw[0]).rand(1, 3, *hw).astype("float32")
        got = session.run(None, {session.get_inputs()[0].name: image})[0]
        np.testing.assert_allclose(got, model(t(image)).numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nearest_upsampling_of_unknown_dims_repeats_items(backend):
    """`nn.Upsample(scale_factor=2)` of run-time sizes is a gather of each
    item twice: bitwise the eager values, the same gradient."""
    up = nn.Upsample(scale_factor=2.0, data_format="NHWC")
    static = paddle.jit.to_static(up, input_spec=[InputSpec([None, None, None, 3])],
                                  backend=backend)
    x = paddle.to_tensor(np.random.RandomState(1).randn(2, 3, 5, 3).astype("float32"),
                         stop_gradient=False)
    results = []
    for f in (up, static):
        out = f(x)
        (out * out).sum().backward()
        results.append((out.numpy(), x.grad.numpy()))
        x.clear_grad()
    np.testing.assert_array_equal(results[1][0], results[0][0])
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)
