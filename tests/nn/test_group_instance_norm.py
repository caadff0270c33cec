"""Group and instance normalization (`nn.GroupNorm`, `nn.InstanceNorm*D`,
`F.group_norm`, `F.instance_norm`): values against a numpy reference and
PyTorch, gradients against finite differences (float64), the converted layer
against the eager one on numpy and xla (with a `None` batch and spatial dim),
and the ONNX export run in ONNX Runtime."""
import importlib.util
import os

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import InputSpec, to_static


def group_reference(x, groups, w, b, eps):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    mu = g.mean(axis=2, keepdims=True)
    var = ((g - mu) ** 2).mean(axis=2, keepdims=True)
    y = ((g - mu) / np.sqrt(var + eps)).reshape(x.shape)
    shape = [1, c] + [1] * (x.ndim - 2)
    return y * w.reshape(shape) + b.reshape(shape)


@pytest.mark.parametrize("shape, groups", [((2, 4, 3, 5), 2), ((3, 6, 7), 3), ((2, 4, 2, 2), 4),
                                           ((2, 4, 3, 3), 1)])
def test_group_norm_matches_the_numpy_reference(shape, groups):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype("float32")
    w, b = rng.normal(size=shape[1]).astype("float32"), rng.normal(size=shape[1]).astype("float32")
    got = F.group_norm(d2s.to_tensor(x), groups, 1e-5, d2s.to_tensor(w), d2s.to_tensor(b))
    np.testing.assert_allclose(got.numpy(), group_reference(x, groups, w, b, 1e-5),
                               rtol=1e-5, atol=1e-5)


def test_channel_last_equals_channel_first_transposed():
    x = np.random.default_rng(1).normal(size=(2, 3, 4, 6)).astype("float32")  # NHWC, C=6
    last = F.group_norm(d2s.to_tensor(x), 3, data_format="NHWC").numpy()
    first = F.group_norm(d2s.to_tensor(x.transpose(0, 3, 1, 2)), 3).numpy()
    np.testing.assert_allclose(last, first.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)
    inst_last = F.instance_norm(d2s.to_tensor(x), data_format="NHWC").numpy()
    inst_first = F.instance_norm(d2s.to_tensor(x.transpose(0, 3, 1, 2))).numpy()
    np.testing.assert_allclose(inst_last, inst_first.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


def test_layers_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 6, 5, 4)).astype("float32")
    gn, tgn = nn.GroupNorm(3, 6), torch.nn.GroupNorm(3, 6)
    inn, tin = nn.InstanceNorm2D(6), torch.nn.InstanceNorm2d(6, affine=True)
    for ours, theirs, names in [(gn, tgn, ("weight", "bias")), (inn, tin, ("scale", "bias"))]:
        w, b = rng.normal(size=6).astype("float32"), rng.normal(size=6).astype("float32")
        ours.set_state_dict({names[0]: w, names[1]: b})
        with torch.no_grad():
            theirs.weight.copy_(torch.from_numpy(w))
            theirs.bias.copy_(torch.from_numpy(b))
        xt = torch.from_numpy(x).requires_grad_()
        ref = theirs(xt)
        (ref * ref).sum().backward()
        xd = d2s.to_tensor(x, stop_gradient=False)
        out = ours(xd)
        (out * out).sum().backward()
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(getattr(ours, names[0]).grad.numpy(),
                                   theirs.weight.grad.numpy(), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("which", ["group", "instance"])
def test_gradients_match_finite_differences(which):
    rng = np.random.default_rng(3)
    x0 = rng.normal(size=(2, 4, 3))
    w0, b0 = rng.normal(size=4), rng.normal(size=4)
    probe = rng.normal(size=x0.shape)

    def f(x, w, b):
        if which == "group":
            y = F.group_norm(x, 2, 1e-5, w, b, data_format="NCL")
        else:
            y = F.instance_norm(x, weight=w, bias=b, data_format="NCL")
        return (y * d2s.to_tensor(probe)).sum()

    args = [d2s.to_tensor(a, stop_gradient=False) for a in (x0, w0, b0)]
    f(*args).backward()
    for k, a0 in enumerate((x0, w0, b0)):
        num = np.zeros_like(a0)
        for idx in np.ndindex(a0.shape):
            hi, lo = a0.copy(), a0.copy()
            hi[idx] += 1e-6
            lo[idx] -= 1e-6
            vals = []
            for v in (hi, lo):
                call = [d2s.to_tensor(a) for a in (x0, w0, b0)]
                call[k] = d2s.to_tensor(v)
                vals.append(f(*call).item())
            num[idx] = (vals[0] - vals[1]) / 2e-6
        np.testing.assert_allclose(args[k].grad.numpy(), num, rtol=1e-5, atol=1e-6)


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 4, 3, padding=1)
        self.gn = nn.GroupNorm(2, 4)
        self.inn = nn.InstanceNorm2D(4)

    def forward(self, x):
        return self.inn(F.relu(self.gn(self.conv(x))))


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_block_equals_eager_with_unknown_dims(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    d2s.seed(0)
    block = Block()
    rng = np.random.default_rng(4)
    x = d2s.to_tensor(rng.normal(size=(2, 3, 5, 6)).astype("float32"), stop_gradient=False)
    # a random probe: the sum of squares of a normalized output is nearly constant
    probe = d2s.to_tensor(rng.normal(size=(2, 4, 5, 6)).astype("float32"))
    eager = block(x)
    (eager * probe).sum().backward()
    eager_grads = [p.grad.numpy().copy() for p in block.parameters()]
    block.clear_gradients()
    static = to_static(block.forward, input_spec=[InputSpec([None, 3, None, None])],
                       backend=backend)
    out = static(x)
    (out * probe).sum().backward()
    np.testing.assert_allclose(out.numpy(), eager.numpy(), rtol=1e-5, atol=1e-5)
    for p, g in zip(block.parameters(), eager_grads):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-4, atol=1e-5)


def test_exported_to_onnx_runs_in_onnx_runtime(tmp_path):
    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        pytest.skip("the onnx extra is not installed")
    import onnxruntime as ort
    d2s.seed(0)
    block = Block()
    path = d2s.onnx.export(block, os.fspath(tmp_path / "gn.onnx"),
                           input_spec=[InputSpec([None, 3, 5, 6])])
    x = np.random.default_rng(5).normal(size=(2, 3, 5, 6)).astype("float32")
    out, = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(out, block(d2s.to_tensor(x)).numpy(), rtol=1e-4, atol=1e-5)


def test_bad_group_counts_are_clear_errors():
    with pytest.raises(ValueError, match="must divide"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match="must divide"):
        F.group_norm(d2s.ones([2, 4, 3]), 3)
    with pytest.raises(ValueError, match="expected a 4-d input"):
        nn.InstanceNorm2D(4)(d2s.ones([2, 4, 3]))
