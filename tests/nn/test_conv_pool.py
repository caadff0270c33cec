"""Convolution and pooling: the ops against PyTorch and finite differences,
the layers' Paddle surface, eager vs to_static on the numpy and xla backends,
and ONNX export run in ONNX Runtime."""
import warnings

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.core.dispatch import bind
from d2s.jit import to_static

from nn_helpers import numeric_grads

RNG = np.random.default_rng(7)


def _t(a, grad=True):
    return d2s.to_tensor(a, stop_gradient=not grad)


def _conv_ref(torch, x, w, b, stride, pads, dilation, groups):
    """PyTorch's conv2d on an input padded (t, b, l, r) beforehand."""
    t, bo, l, r = pads
    xp = torch.nn.functional.pad(x, (l, r, t, bo))
    return torch.nn.functional.conv2d(xp, w, b, stride=stride, dilation=dilation, groups=groups)


# (shape, out_channels, kernel, stride, padding, dilation, groups, resolved pads)
CONV_CASES = [
    ((2, 4, 7, 6), 6, 3, 1, 0, 1, 1, (0, 0, 0, 0)),
    ((2, 4, 7, 6), 6, 3, 2, 1, 1, 2, (1, 1, 1, 1)),
    ((1, 3, 8, 9), 4, (3, 2), (2, 1), [1, 2], 2, 1, (1, 1, 2, 2)),
    ((2, 2, 6, 7), 4, 3, 1, [1, 0, 2, 1], (1, 2), 2, (1, 0, 2, 1)),
    ((2, 4, 7, 7), 4, 3, 2, "SAME", 1, 4, (1, 1, 1, 1)),           # depthwise
    ((2, 3, 6, 6), 6, 3, 1, "VALID", 1, 3, (0, 0, 0, 0)),
    ((1, 2, 5, 6), 2, 2, 2, [[0, 0], [0, 0], [1, 0], [0, 1]], 1, 1, (1, 0, 0, 1)),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_conv2d_matches_torch_values_and_gradients(case, data_format):
    torch = pytest.importorskip("torch")
    shape, o, k, stride, padding, dilation, groups, pads = case
    if data_format == "NHWC" and isinstance(padding, list) and isinstance(padding[0], list):
        padding = [padding[0], padding[2], padding[3], padding[1]]
    kh, kw = (k, k) if isinstance(k, int) else k
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((o, shape[1] // groups, kh, kw))
    b = RNG.standard_normal(o)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ref = _conv_ref(torch, xt, wt, bt, stride, pads, dilation, groups)
    g = RNG.standard_normal(tuple(ref.shape))
    ref.backward(torch.tensor(g))

    xd, wd, bd = _t(x if data_format == "NCHW" else x.transpose(0, 2, 3, 1)), _t(w), _t(b)
    out = F.conv2d(xd, wd, bd, stride, padding, dilation, groups, data_format)
    gd = g if data_format == "NCHW" else g.transpose(0, 2, 3, 1)
    (out * _t(gd, False)).sum().backward()
    got, gx = out.numpy(), xd.grad.numpy()
    if data_format == "NHWC":
        got, gx = got.transpose(0, 3, 1, 2), gx.transpose(0, 3, 1, 2)
    np.testing.assert_allclose(got, ref.detach().numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(wd.grad.numpy(), wt.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(bd.grad.numpy(), bt.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_conv1d_matches_torch():
    torch = pytest.importorskip("torch")
    x, w, b = RNG.standard_normal((2, 4, 9)), RNG.standard_normal((6, 2, 3)), RNG.standard_normal(6)
    ref = torch.nn.functional.conv1d(torch.tensor(x), torch.tensor(w), torch.tensor(b),
                                     stride=2, padding=1, dilation=2, groups=2)
    got = F.conv1d(_t(x), _t(w), _t(b), stride=2, padding=1, dilation=2, groups=2)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10)
    nlc = F.conv1d(_t(x.transpose(0, 2, 1)), _t(w), _t(b), 2, [1, 1], 2, 2, data_format="NLC")
    np.testing.assert_allclose(nlc.numpy().transpose(0, 2, 1), ref.numpy(), rtol=1e-10)


@pytest.mark.parametrize("op,attrs", [
    ("conv2d_grad_input", dict(input_hw=(5, 4), stride=(2, 1), padding=(1, 0, 0, 1),
                               dilation=(1, 2), groups=2)),
    ("conv2d_grad_filter", dict(kernel_hw=(2, 2), stride=(2, 1), padding=(1, 0, 0, 1),
                                dilation=(1, 2), groups=2)),
])
def test_the_gradient_ops_have_exact_gradients_themselves(op, attrs):
    """Second-order derivatives: the grad ops' own vjps vs finite differences."""
    x = RNG.standard_normal((2, 4, 5, 4))
    w = RNG.standard_normal((4, 2, 2, 2))
    conv = dict(attrs)
    conv.pop("input_hw", None), conv.pop("kernel_hw", None)
    g = bind("conv2d", _t(x, False), _t(w, False), **conv).numpy()
    g = RNG.standard_normal(g.shape)
    a, b = (g, w) if op == "conv2d_grad_input" else (x, g)

    def fn(p, q):
        return bind(op, p, q, **attrs)
    pa, pb = _t(a), _t(b)
    (fn(pa, pb) * _t(np.cos(np.arange(fn(pa, pb).size)).reshape(fn(pa, pb).shape),
                     False)).sum().backward()
    weights = np.cos(np.arange(fn(pa, pb).size)).reshape(fn(pa, pb).shape)
    num = numeric_grads(lambda p, q: fn(p, q) * _t(weights, False), a, b)
    np.testing.assert_allclose(pa.grad.numpy(), num[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(pb.grad.numpy(), num[1], rtol=1e-6, atol=1e-7)


# (input shape, kernel, stride, padding, ceil_mode)
POOL_CASES = [
    ((2, 3, 8, 8), 2, None, 0, False),
    ((2, 3, 8, 8), 3, 2, 1, False),
    ((2, 3, 8, 8), 3, 2, 1, True),
    ((1, 2, 7, 9), (3, 2), (2, 3), [1, 0], True),
    ((1, 2, 9, 7), (2, 3), 2, [1, 1, 0, 1], False),
]


def _torch_pads(torch, x, padding, value):
    if isinstance(padding, list) and len(padding) == 4:
        t, b, l, r = padding
        return torch.nn.functional.pad(x, (l, r, t, b), value=value), 0
    return x, padding


@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool2d_matches_torch(case):
    torch = pytest.importorskip("torch")
    shape, k, s, p, ceil = case
    x = RNG.standard_normal(shape)
    x[0, 0, :2, :2] = 1.5  # ties: the first maximum takes the gradient
    xt = torch.tensor(x, requires_grad=True)
    xp, tp = _torch_pads(torch, xt, p, -np.inf)
    ref = torch.nn.functional.max_pool2d(xp, k, s, tp, ceil_mode=ceil)
    g = RNG.standard_normal(tuple(ref.shape))
    ref.backward(torch.tensor(g))
    xd = _t(x)
    out = F.max_pool2d(xd, k, s, p, ceil_mode=ceil)
    (out * _t(g, False)).sum().backward()
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("exclusive", [True, False])
def test_avg_pool2d_matches_torch(case, exclusive):
    torch = pytest.importorskip("torch")
    shape, k, s, p, ceil = case
    if isinstance(p, list) and len(p) == 4:
        pytest.skip("torch has no asymmetric average-pool padding")
    x = RNG.standard_normal(shape)
    xt = torch.tensor(x, requires_grad=True)
    ref = torch.nn.functional.avg_pool2d(xt, k, s, p, ceil_mode=ceil,
                                         count_include_pad=not exclusive)
    g = RNG.standard_normal(tuple(ref.shape))
    ref.backward(torch.tensor(g))
    xd = _t(x)
    out = F.avg_pool2d(xd, k, s, p, ceil_mode=ceil, exclusive=exclusive)
    (out * _t(g, False)).sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("size,out", [((7, 5), (3, 2)), ((6, 6), 1), ((5, 8), (5, 3)),
                                      ((6, 4), (None, 3))])
def test_adaptive_avg_pool2d_matches_torch(size, out):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3) + size)
    xt = torch.tensor(x, requires_grad=True)
    ref = torch.nn.functional.adaptive_avg_pool2d(xt, out)
    ref.sum().backward()
    xd = _t(x)
    got = nn.AdaptiveAvgPool2D(out)(xd)
    got.sum().backward()
    np.testing.assert_allclose(got.numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


def test_pool_gradients_match_finite_differences():
    x = RNG.standard_normal((1, 2, 5, 5))
    wts = np.cos(np.arange(18)).reshape(1, 2, 3, 3)
    for fn in (lambda v: F.max_pool2d(v, 3, 2, 1, ceil_mode=True) * _t(wts, False),
               lambda v: F.avg_pool2d(v, 3, 2, 1, ceil_mode=True, exclusive=False)
               * _t(wts, False)):
        xd = _t(x)
        fn(xd).sum().backward()
        np.testing.assert_allclose(xd.grad.numpy(), numeric_grads(fn, x)[0], rtol=1e-6,
                                   atol=1e-8)


def test_conv2d_layer_surface_and_initialisation():
    d2s.seed(3)
    conv = nn.Conv2D(4, 8, 3, padding=1, groups=2)
    assert [n for n, _ in conv.named_parameters()] == ["weight", "bias"]
    assert conv.weight.shape == (8, 2, 3, 3) and conv.bias.shape == (8,)
    assert not conv.bias.numpy().any()
    big = nn.Conv2D(64, 64, 3)  # Paddle's default: Normal(0, sqrt(2 / (k*k*in_channels)))
    np.testing.assert_allclose(big.weight.numpy().std(), np.sqrt(2 / (9 * 64)), rtol=0.05)
    assert nn.Conv2D(4, 8, 3, bias_attr=False).bias is None
    attr = d2s.ParamAttr(name="my_w", initializer=nn.initializer.Constant(0.5))
    c2 = nn.Conv1D(2, 3, 2, weight_attr=attr)
    assert c2.weight.name == "my_w" and (c2.weight.numpy() == 0.5).all()
    assert c2.weight.shape == (3, 2, 2)
    assert nn.Conv2D(4, 8, 3)(_t(np.zeros((2, 4, 5, 5), np.float32))).shape == (2, 8, 3, 3)


def test_conv_and_pool_bad_input_is_a_clear_error():
    conv = nn.Conv2D(4, 8, 3)
    with pytest.raises(ValueError, match="expects 4 input channels, got 3"):
        conv(_t(np.zeros((1, 3, 5, 5), np.float32)))
    with pytest.raises(ValueError, match="4-D input"):
        conv(_t(np.zeros((3, 5, 5), np.float32)))
    with pytest.raises(ValueError, match="groups=3 must divide in_channels=4"):
        nn.Conv2D(4, 6, 3, groups=3)
    with pytest.raises(ValueError, match="padding must be"):
        F.conv2d(_t(np.zeros((1, 1, 4, 4))), _t(np.zeros((1, 1, 2, 2))), padding="HALF")
    with pytest.raises(ValueError, match="larger than the padded input"):
        F.conv2d(_t(np.zeros((1, 1, 2, 2))), _t(np.zeros((1, 1, 3, 3))))
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2D(1, 1, 3, padding_mode="mirror")


class SmallCNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2D(3, 4, 3, padding=1)
        self.c2 = nn.Conv2D(4, 4, 3, stride=2, padding="SAME", groups=2)
        self.pool = nn.MaxPool2D(2, ceil_mode=True)
        self.avg = nn.AvgPool2D(3, 1, 1, exclusive=False)
        self.gap = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        h = F.relu(self.c1(x))
        h = self.pool(F.silu(self.c2(h)))
        h = self.gap(self.avg(h))
        return self.fc(nn.Flatten()(h))


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_a_cnn_eager_and_converted_agree_with_gradients(backend, monkeypatch):
    if backend == "xla":
        pytest.importorskip("jax")
        monkeypatch.setenv("D2S_XLA_SYNC", "1")
    d2s.seed(5)
    model = SmallCNN()
    x = RNG.standard_normal((2, 3, 9, 9)).astype(np.float32)

    def loss_of(run):
        for p in model.parameters():
            p.clear_grad()
        out = run(_t(x, False))
        (out * out).sum().backward()
        return out.numpy(), [p.grad.numpy() for p in model.parameters()]

    want, want_g = loss_of(model)
    from d2s.static.backend import BackendFallbackWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        got, got_g = loss_of(to_static(model.forward, backend=backend))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_a_cnn_exports_to_onnx_and_runs_in_onnx_runtime(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from d2s.static import InputSpec
    d2s.seed(6)
    model = SmallCNN()
    model.eval()
    path = d2s.onnx.export(model, tmp_path / "cnn.onnx",
                           input_spec=[InputSpec([None, 3, 9, 9], "float32")])
    for n in (1, 3):
        x = RNG.standard_normal((n, 3, 9, 9)).astype(np.float32)
        onnx.checker.check_model(str(path), full_check=True)
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        (got,) = sess.run(None, {sess.get_inputs()[0].name: x})
        want = model(_t(x, False)).numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# (shape, out_channels, kernel, stride, padding, output_padding, dilation, groups)
TRANSPOSE_CASES = [
    ((2, 4, 4, 5), 6, 3, 2, 1, 1, 1, 2),
    ((1, 3, 5, 4), 2, (2, 3), (1, 2), [1, 0], 0, (2, 1), 1),
    ((2, 2, 3, 3), 4, 3, 3, 0, 2, 1, 2),
]


@pytest.mark.parametrize("case", TRANSPOSE_CASES)
def test_conv2d_transpose_matches_torch(case):
    torch = pytest.importorskip("torch")
    shape, o, k, stride, padding, out_pad, dilation, groups = case
    kh, kw = (k, k) if isinstance(k, int) else k
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((shape[1], o // groups, kh, kw))
    b = RNG.standard_normal(o)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ref = torch.nn.functional.conv_transpose2d(xt, wt, bt, stride, padding, out_pad, groups,
                                               dilation)
    g = RNG.standard_normal(tuple(ref.shape))
    ref.backward(torch.tensor(g))
    xd, wd, bd = _t(x), _t(w), _t(b)
    out = F.conv2d_transpose(xd, wd, bd, stride, padding, out_pad, dilation, groups)
    (out * _t(g, False)).sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-10)
    for mine, theirs in ((xd, xt), (wd, wt), (bd, bt)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-10,
                                   atol=1e-10)


def test_conv_transpose_layers_xla_and_onnx(tmp_path, monkeypatch):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("jax")
    monkeypatch.setenv("D2S_XLA_SYNC", "1")
    from d2s.static import InputSpec
    d2s.seed(4)
    up = nn.Sequential(nn.Conv2DTranspose(3, 4, 3, stride=2, padding=1, output_padding=1),
                       nn.ReLU(), nn.Conv2DTranspose(4, 2, 2, stride=2, groups=2))
    assert up[0].weight.shape == (3, 4, 3, 3)
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    want = up(_t(x, False)).numpy()
    assert want.shape == (2, 2, 16, 20)
    got = to_static(up.forward, backend="xla")(_t(x, False)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    path = d2s.onnx.export(up, tmp_path / "up.onnx",
                           input_spec=[InputSpec([None, 3, 4, 5], "float32")])
    onnx.checker.check_model(str(path), full_check=True)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (res,) = sess.run(None, {sess.get_inputs()[0].name: x})
    np.testing.assert_allclose(res, want, rtol=1e-5, atol=1e-6)
    one = nn.Conv1DTranspose(2, 3, 3, stride=2)
    assert one(_t(np.zeros((1, 2, 5), np.float32))).shape == (1, 3, 11)
    assert nn.Conv2DTranspose(3, 4, 3, stride=2)(_t(x, False), output_size=[10, 12]).shape \
        == (2, 4, 10, 12)
