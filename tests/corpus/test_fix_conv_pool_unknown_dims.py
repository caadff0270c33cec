"""Regression (found by the corpus's UNet and ResNet with `None` image sizes):
convolution, transposed convolution and pooling over spatial dims unknown
when the program is built. The transposed convolution's output size and the
gradients' input sizes used to be fixed while building ("needs the spatial
dims known", or "the gradient needs the spatial dims of an input with stride
[2, 2] known"); a strided window may leave trailing rows no window reads, so
the output's size does not give the input's. Now the shape rules give `None`
there and the kernels take the sizes when they run: the gradient ops read
the forward input's dims, the transposed convolution derives its output from
its input's. Checked against eager (values and gradients) on numpy, on the
reference interpreter and on xla, for two input sizes with one program, in
2-D, 1-D and 3-D (one op family); and the ONNX export keeps the dims
dynamic."""
import contextlib

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.core.registry import OPS, Aval
from d2s.static import InputSpec
from d2s.static.executor import executor_mode, set_executor_mode

from harness import HAS_JAX, close

MODES = ["numpy", "interpreter",
         pytest.param("xla", marks=pytest.mark.skipif(not HAS_JAX, reason="needs jax"))]


@contextlib.contextmanager
def running_on(mode):
    """The backend to convert for; the interpreter is the numpy backend's
    reference executor."""
    previous = executor_mode()
    set_executor_mode("interpreter" if mode == "interpreter" else "compiled")
    try:
        yield "xla" if mode == "xla" else "numpy"
    finally:
        set_executor_mode(previous)


def check_like_eager(fn, spec, shapes, mode, weights=()):
    """`fn(x, *weights)` converted with `spec` for x: output, x's and the
    weights' gradients equal eager for each shape in `shapes`; one program."""
    rng = np.random.default_rng(len(shapes))
    with running_on(mode) as backend:
        static = d2s.jit.to_static(fn, backend=backend, input_spec=[InputSpec(spec)] + [
            InputSpec(list(w.shape)) for w in weights])
        for shape in shapes:
            x = rng.normal(size=shape).astype("float32")
            results = []
            for f in (fn, static):
                args = [d2s.to_tensor(a, stop_gradient=False) for a in (x,) + tuple(weights)]
                y = f(*args)
                (y * y).sum().backward()
                results.append([y.numpy()] + [a.grad.numpy() for a in args])
            for what, a, e in zip(["output", "x grad"] + ["weight grad"] * len(weights),
                                  results[1], results[0]):
                assert a.shape == e.shape, f"{what} for {shape}: {a.shape} != {e.shape}"
                close(a, e, backend, f"{what} for {shape}")
        assert len(static.program_cache) == 1


def _w(*shape):
    return np.random.default_rng(sum(shape)).normal(size=shape).astype("float32")


CONV_T = [  # (label, fn, weights)
    ("stride2", lambda x, w: F.conv2d_transpose(x, w, stride=2), [_w(3, 2, 2, 2)]),
    ("stride2_pad_outpad", lambda x, w: F.conv2d_transpose(
        x, w, stride=2, padding=1, output_padding=1), [_w(3, 2, 3, 3)]),
    ("dilation_groups", lambda x, w: F.conv2d_transpose(
        x, w, stride=(1, 2), dilation=2, groups=3, padding=[1, 0]), [_w(3, 1, 2, 3)]),
    ("same", lambda x, w: F.conv2d_transpose(x, w, stride=2, padding="SAME"),
     [_w(3, 2, 3, 3)]),
    ("nhwc", lambda x, w: F.conv2d_transpose(
        x.transpose([0, 2, 3, 1]), w, stride=2, data_format="NHWC"), [_w(3, 2, 3, 3)]),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("label, fn, weights", CONV_T, ids=[c[0] for c in CONV_T])
def test_conv2d_transpose_over_unknown_dims(mode, label, fn, weights):
    check_like_eager(fn, [None, 3, None, None], [(2, 3, 4, 5), (1, 3, 3, 2)], mode, weights)


@pytest.mark.parametrize("mode", MODES)
def test_conv1d_transpose_and_layer_over_unknown_length(mode):
    d2s.seed(0)
    up = nn.Conv1DTranspose(3, 2, 3, stride=2, padding=1, output_padding=1)
    check_like_eager(lambda x: up(x), [None, 3, None], [(2, 3, 5), (1, 3, 2)], mode)


STRIDED = [  # (label, fn, weights): windows that may leave trailing rows unread
    ("conv_stride2", lambda x, w: F.conv2d(x, w, stride=2, padding=1), [_w(4, 3, 3, 3)]),
    ("conv_stride3_dilated", lambda x, w: F.conv2d(x, w, stride=(3, 2), dilation=2),
     [_w(2, 3, 2, 2)]),
    ("conv_transpose_of_conv", lambda x, w: d2s.tanh(F.conv2d_transpose(
        F.conv2d(x, w, stride=2), w, stride=2)), [0.3 * _w(4, 3, 2, 2)]),
    ("max_pool", lambda x: F.max_pool2d(x, 2), []),
    ("max_pool_ceil_pad", lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True), []),
    ("avg_pool", lambda x: F.avg_pool2d(x, 2), []),
    ("avg_pool_incl_ceil", lambda x: F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True,
                                                  exclusive=False), []),
    ("adaptive_avg_pool", lambda x: F.adaptive_avg_pool2d(x, 3), []),
    ("adaptive_avg_pool_keep_w", lambda x: F.adaptive_avg_pool2d(x, [2, None]), []),
    ("avg_pool1d", lambda x: F.avg_pool1d(x[:, :, 0], 2), []),
    ("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x[:, :, 0], 2), []),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("label, fn, weights", STRIDED, ids=[c[0] for c in STRIDED])
def test_strided_windows_differentiate_over_unknown_dims(mode, label, fn, weights):
    # 7x8 leaves a row or column no stride-2 window reads; 6x5 the other way round
    check_like_eager(fn, [None, 3, None, None], [(2, 3, 7, 8), (1, 3, 6, 5)], mode, weights)


VOLUMES = [  # the 3-D members of the same op family (conv_nd.py)
    # (tanh and small weights: xla's float32 sums stay within the tolerance)
    ("conv3d_stride2", lambda x, w: d2s.tanh(F.conv3d(x, w, stride=2, padding=1)),
     [0.3 * _w(3, 2, 3, 3, 3)]),
    ("conv3d_transpose", lambda x, w: d2s.tanh(F.conv3d_transpose(
        x, w, stride=(2, 1, 2), padding=1, output_padding=(1, 0, 0))), [0.3 * _w(2, 3, 3, 2, 3)]),
    ("max_pool3d", lambda x: F.max_pool3d(x, 2, ceil_mode=True), []),
    ("avg_pool3d", lambda x: F.avg_pool3d(x, 3, 2, padding=1), []),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("label, fn, weights", VOLUMES, ids=[c[0] for c in VOLUMES])
def test_volumes_over_unknown_dims(mode, label, fn, weights):
    check_like_eager(fn, [None, 2, None, None, None], [(1, 2, 5, 4, 6), (2, 2, 4, 3, 3)], mode,
                     weights)


def test_shape_rules_give_unknown_dims():
    f32 = np.dtype("float32")
    attrs = dict(stride=(2, 2), padding=(1, 1, 0, 0), dilation=(1, 1), groups=1)
    g, w = Aval((2, 4, None, 3), f32), Aval((4, 3, 3, 3), f32)
    # a transposed convolution: the known dim derived, the unknown one None
    out = OPS["conv2d_grad_input"].infer(g, w, input_hw=(None, None), output_padding=(1, 0),
                                         **attrs)
    assert out.shape == (2, 3, None, (3 - 1) * 2 + 3)
    # a gradient: the forward input's dims, known or not
    x = Aval((2, 3, None, 8), f32)
    out = OPS["conv2d_grad_input"].infer(g, w, x, input_hw=(None, 8), **attrs)
    assert out.shape == (2, 3, None, 8)
    pool = dict(kernel=(2, 2), stride=(2, 2), padding=(0, 0, 0, 0), ceil_mode=False)
    assert OPS["avg_pool2d_grad"].infer(g, x, input_hw=(None, 8), exclusive=True,
                                        **pool).shape == (2, 4, None, 8)
    assert OPS["max_pool2d"].infer(x, **pool).shape == (2, 3, None, 4)


def test_output_size_over_unknown_dims_says_what_to_give():
    fn = d2s.jit.to_static(lambda x, w: F.conv2d_transpose(x, w, stride=2, output_size=[9, 9]),
                           input_spec=[InputSpec([None, 3, None, None]), InputSpec([3, 2, 2, 2])])
    with pytest.raises(ValueError, match="output_size.*needs the input's spatial dims known.*"
                                         "input_spec.*output_padding"):
        fn(d2s.ones([1, 3, 4, 4]), d2s.ones([3, 2, 2, 2]))


def test_onnx_export_keeps_dims_dynamic(tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")

    class Up(nn.Layer):
        def __init__(self):
            super().__init__()
            self.up = nn.Conv2DTranspose(3, 2, 3, stride=2, padding=1, output_padding=1)
            self.pool = nn.AdaptiveAvgPool2D(2)

        def forward(self, x):
            y = self.up(F.avg_pool2d(x, 2, ceil_mode=True))
            return y, self.pool(y)

    d2s.seed(0)
    layer = Up()
    layer.eval()
    path = d2s.onnx.export(layer, tmp_path / "up.onnx",
                           input_spec=[InputSpec([None, 3, None, None], name="x")])
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for shape in [(1, 3, 6, 7), (2, 3, 9, 4)]:
        x = np.random.default_rng(shape[2]).normal(size=shape).astype("float32")
        got = sess.run(None, {sess.get_inputs()[0].name: x})
        want = layer(d2s.to_tensor(x))
        for g, e in zip(got, want):
            assert g.shape == tuple(e.shape)
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-6)
