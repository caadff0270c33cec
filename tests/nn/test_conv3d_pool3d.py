"""3-D convolution and pooling (issue 28): the ops against PyTorch (values
and gradients), the convolution gradient ops' own gradients against finite
differences, eager vs to_static on the numpy and xla backends with
gradients, and ONNX export run in ONNX Runtime."""
import warnings

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.core.dispatch import bind
from d2s.jit import to_static

from nn_helpers import numeric_grads

RNG = np.random.default_rng(11)


def _t(a, grad=True):
    return d2s.to_tensor(a, stop_gradient=not grad)


# (shape, out_channels, kernel, stride, padding, dilation, groups, torch pad (w, h, d pairs))
CONV_CASES = [
    ((2, 4, 5, 6, 5), 6, 3, 1, 1, 1, 2, (1, 1, 1, 1, 1, 1)),
    ((1, 3, 6, 5, 7), 4, (2, 3, 2), (2, 1, 2), [1, 0, 2], (1, 1, 2), 1, (2, 2, 0, 0, 1, 1)),
    ((1, 2, 5, 5, 6), 4, 2, 2, [0, 1, 1, 0, 0, 1], 1, 2, (0, 1, 1, 0, 0, 1)),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("data_format", ["NCDHW", "NDHWC"])
def test_conv3d_matches_torch_values_and_gradients(case, data_format):
    torch = pytest.importorskip("torch")
    shape, o, k, stride, padding, dilation, groups, tpad = case
    kd, kh, kw = (k,) * 3 if isinstance(k, int) else k
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((o, shape[1] // groups, kd, kh, kw))
    b = RNG.standard_normal(o)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ref = torch.nn.functional.conv3d(torch.nn.functional.pad(xt, tpad), wt, bt, stride=stride,
                                     dilation=dilation, groups=groups)
    g = RNG.standard_normal(tuple(ref.shape))
    ref.backward(torch.tensor(g))
    last = data_format == "NDHWC"
    xd, wd, bd = _t(x.transpose(0, 2, 3, 4, 1) if last else x), _t(w), _t(b)
    out = F.conv3d(xd, wd, bd, stride, padding, dilation, groups, data_format)
    gd = g.transpose(0, 2, 3, 4, 1) if last else g
    (out * _t(gd, False)).sum().backward()
    want = ref.detach().numpy()
    np.testing.assert_allclose(out.numpy(), want.transpose(0, 2, 3, 4, 1) if last else want,
                               rtol=1e-10, atol=1e-10)
    gx = xt.grad.numpy()
    np.testing.assert_allclose(xd.grad.numpy(), gx.transpose(0, 2, 3, 4, 1) if last else gx,
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(wd.grad.numpy(), wt.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(bd.grad.numpy(), bt.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", [
    ((2, 4, 3, 4, 3), 6, 3, 2, 1, 1, 1, 2),
    ((1, 3, 3, 2, 3), 2, (2, 3, 2), (1, 2, 2), [1, 0, 1], 0, (2, 1, 1), 1),
])
def test_conv3d_transpose_matches_torch(case):
    torch = pytest.importorskip("torch")
    shape, o, k, stride, padding, out_pad, dilation, groups = case
    kd, kh, kw = (k,) * 3 if isinstance(k, int) else k
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((shape[1], o // groups, kd, kh, kw))
    b = RNG.standard_normal(o)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ref = torch.nn.functional.conv_transpose3d(xt, wt, bt, stride, padding, out_pad, groups,
                                               dilation)
    g = RNG.standard_normal(tuple(ref.shape))
    ref.backward(torch.tensor(g))
    xd, wd, bd = _t(x), _t(w), _t(b)
    out = F.conv3d_transpose(xd, wd, bd, stride, padding, out_pad, dilation, groups)
    (out * _t(g, False)).sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-10)
    for mine, theirs in ((xd, xt), (wd, wt), (bd, bt)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-10,
                                   atol=1e-10)


@pytest.mark.parametrize("op", ["conv3d_grad_input", "conv3d_grad_filter"])
def test_the_3d_gradient_ops_have_exact_gradients_themselves(op):
    attrs = dict(stride=(2, 1, 1), padding=(1, 0, 0, 1, 1, 0), dilation=(1, 1, 2), groups=2)
    x = RNG.standard_normal((1, 4, 3, 3, 4))
    w = RNG.standard_normal((2, 2, 2, 2, 2))
    g = RNG.standard_normal(bind("conv3d", _t(x, False), _t(w, False), **attrs).shape)
    extra = dict(input_dhw=(3, 3, 4)) if op == "conv3d_grad_input" else dict(
        kernel_dhw=(2, 2, 2))
    a, b = (g, w) if op == "conv3d_grad_input" else (x, g)
    out_shape = bind(op, _t(a, False), _t(b, False), **attrs, **extra).shape
    weights = _t(np.cos(np.arange(int(np.prod(out_shape)))).reshape(out_shape), False)

    def fn(p, q):
        return bind(op, p, q, **attrs, **extra) * weights
    pa, pb = _t(a), _t(b)
    fn(pa, pb).sum().backward()
    num = numeric_grads(fn, a, b)
    np.testing.assert_allclose(pa.grad.numpy(), num[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(pb.grad.numpy(), num[1], rtol=1e-6, atol=1e-7)


# (shape, kernel, stride, padding, ceil_mode)
POOL_CASES = [
    ((2, 3, 4, 4, 4), 2, None, 0, False),
    ((1, 2, 5, 6, 5), 3, 2, 1, False),
    ((1, 2, 5, 6, 7), (3, 2, 3), (2, 2, 3), [1, 0, 1], True),
]


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "avg_exclusive", "avg_inclusive"])
def test_pool3d_matches_torch(case, kind):
    torch = pytest.importorskip("torch")
    shape, k, stride, padding, ceil_mode = case
    x = RNG.standard_normal(shape)
    xt = torch.tensor(x, requires_grad=True)
    if kind == "max":
        ref = torch.nn.functional.max_pool3d(xt, k, stride, padding, ceil_mode=ceil_mode)
    else:
        ref = torch.nn.functional.avg_pool3d(xt, k, stride, padding, ceil_mode=ceil_mode,
                                             count_include_pad=kind == "avg_inclusive")
    g = RNG.standard_normal(tuple(ref.shape))
    ref.backward(torch.tensor(g))
    xd = _t(x)
    if kind == "max":
        out = F.max_pool3d(xd, k, stride, padding, ceil_mode)
    else:
        out = F.avg_pool3d(xd, k, stride, padding, ceil_mode, exclusive=kind == "avg_exclusive")
    (out * _t(g, False)).sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


class Small3D(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3D(2, 4, 3, padding=1)
        self.pool = nn.MaxPool3D(2)
        self.up = nn.Conv3DTranspose(4, 3, 2, stride=2)
        self.avg = nn.AvgPool3D(2, stride=1, padding=1, exclusive=False)

    def forward(self, x):
        return self.avg(self.up(F.relu(self.pool(self.conv(x)))))


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_3d_net_eager_and_converted_agree_with_gradients(backend, monkeypatch):
    if backend == "xla":
        pytest.importorskip("jax")
        monkeypatch.setenv("D2S_XLA_SYNC", "1")
    d2s.seed(5)
    model = Small3D()
    assert model.up.weight.shape == (4, 3, 2, 2, 2)
    x = RNG.standard_normal((2, 2, 4, 4, 6)).astype(np.float32)

    def loss_of(run):
        for p in model.parameters():
            p.clear_grad()
        out = run(_t(x, False))
        (out * out).sum().backward()
        return out.numpy(), [p.grad.numpy() for p in model.parameters()]

    want, want_g = loss_of(model)
    assert want.shape == (2, 3, 5, 5, 7)
    from d2s.static.backend import BackendFallbackWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        got, got_g = loss_of(to_static(model.forward, backend=backend))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_3d_net_exports_to_onnx(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from d2s.static import InputSpec
    d2s.seed(6)
    model = Small3D()
    model.eval()
    path = d2s.onnx.export(model, tmp_path / "c3d.onnx",
                           input_spec=[InputSpec([None, 2, 4, 4, 6], "float32")])
    onnx.checker.check_model(str(path), full_check=True)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = RNG.standard_normal((3, 2, 4, 4, 6)).astype(np.float32)
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, model(_t(x, False)).numpy(), rtol=1e-5, atol=1e-6)


def test_3d_bad_input_is_a_clear_error():
    conv = nn.Conv3D(3, 4, 3)
    with pytest.raises(ValueError, match="5-D"):
        conv(_t(np.zeros((1, 3, 4, 4), np.float32), False))
    with pytest.raises(ValueError, match="3 input channels"):
        conv(_t(np.zeros((1, 2, 4, 4, 4), np.float32), False))
    with pytest.raises(ValueError, match="groups"):
        nn.Conv3D(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="larger than"):
        conv(_t(np.zeros((1, 3, 2, 4, 4), np.float32), False))
