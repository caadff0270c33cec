"""Buffers (`register_buffer`) and batch normalization (issue 25 item 2).

BatchNorm's running statistics are buffers updated in `forward`; converted
by `to_static` the update is a write replayed after each run. Expected
values come from a numpy reference of PaddlePaddle's documented rule (biased
batch variance, `stat * momentum + batch * (1 - momentum)`), from PyTorch's
BatchNorm2d (momentum `1 - m`) where torch is installed, and from the eager
layer against the converted one (bitwise on numpy) over many steps with
`train()` / `eval()` switches, on numpy and xla.
"""
import os
import sys

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static
from d2s.jit.train_step import StepProgram

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "jit"))
from no_variables_left import assert_no_variables_left  # noqa: E402

BACKENDS = ["numpy", "xla"]


def _backend(name):
    if name == "xla":
        pytest.importorskip("jax")
    return name


def t(a, grad=False):
    return d2s.to_tensor(np.asarray(a, dtype="float32"), stop_gradient=not grad)


def reference(x, mean, var, w, b, training, momentum, eps, axis):
    """(y, new running mean, new running var) by PaddlePaddle's documented rule."""
    axes = tuple(i for i in range(x.ndim) if i != axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    if training:
        mu = x.mean(axis=axes)
        sigma2 = ((x - mu.reshape(shape)) ** 2).mean(axis=axes)
        mean = mean * momentum + mu * (1 - momentum)
        var = var * momentum + sigma2 * (1 - momentum)
    else:
        mu, sigma2 = mean, var
    y = (x - mu.reshape(shape)) / np.sqrt(sigma2.reshape(shape) + eps)
    return y * w.reshape(shape) + b.reshape(shape), mean, var


@pytest.mark.parametrize("shape, data_format, axis", [
    ((4, 3), "NC", 1), ((4, 3, 5), "NCL", 1), ((4, 5, 3), "NLC", 2),
    ((2, 3, 4, 5), "NCHW", 1), ((2, 4, 5, 3), "NHWC", 3)])
@pytest.mark.parametrize("training", [True, False])
def test_functional_batch_norm_matches_the_numpy_reference(shape, data_format, axis, training):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype("float32")
    mean = rng.standard_normal(3).astype("float32")
    var = rng.uniform(0.5, 2.0, 3).astype("float32")
    w, b = rng.standard_normal(3).astype("float32"), rng.standard_normal(3).astype("float32")
    rm, rv = t(mean), t(var)
    y = F.batch_norm(t(x), rm, rv, t(w), t(b), training=training, momentum=0.8,
                     epsilon=1e-3, data_format=data_format)
    want, wm, wv = reference(x.astype("float64"), mean, var, w, b, training, 0.8, 1e-3, axis)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rm.numpy(), wm, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), wv, rtol=1e-6, atol=1e-6)


class _Net(nn.Layer):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        if kind == "2d":
            self.bn = nn.BatchNorm2D(3, momentum=0.8)
            self.fc = nn.Linear(3, 2)
        else:
            self.fc0 = nn.Linear(4, 3)
            self.bn = nn.BatchNorm1D(3)
            self.fc = nn.Linear(3, 2)

    def forward(self, x):
        if self.kind == "2d":
            return self.fc(self.bn(x).mean(axis=[2, 3]))
        return self.fc(self.bn(self.fc0(x)))


def _input(kind, rng):
    shape = (4, 3, 3, 3) if kind == "2d" else (5, 4)
    return t(rng.standard_normal(shape) * 2.0 + 0.5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["2d", "1d"])
def test_batchnorm_trains_and_evaluates_like_eager_over_many_steps(backend, kind):
    np.random.seed(0)
    rng = np.random.default_rng(1)
    static, eager = _Net(kind), _Net(kind)
    eager.set_state_dict(static.state_dict())
    to_static(static, backend=_backend(backend))
    opts = [d2s.optimizer.SGD(0.05, parameters=m.parameters()) for m in (static, eager)]
    exact = backend == "numpy"
    check = np.testing.assert_array_equal if exact else (
        lambda a, b, err_msg="": np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6,
                                                            err_msg=err_msg))
    for step in range(12):
        if step in (4, 9):
            static.eval(), eager.eval()
        if step in (6, 11):
            static.train(), eager.train()
        x = _input(kind, rng)
        ys, ye = static(x), eager(x)
        check(ys.numpy(), ye.numpy(), err_msg=f"output {step}")
        if static.training:
            for m, y, opt in ((static, ys, opts[0]), (eager, ye, opts[1])):
                (y * y).sum().backward()
                opt.step()
                opt.clear_grad()
        for name, buf in eager.named_buffers():
            check(dict(static.named_buffers())[name].numpy(), buf.numpy(),
                  err_msg=f"{name} {step}")
        assert_no_variables_left(("model", static))
    assert not np.allclose(static.bn._mean.numpy(), 0.0)  # the statistics moved


@pytest.mark.parametrize("backend", BACKENDS)
def test_batchnorm_inside_a_converted_training_step(backend):
    rng = np.random.default_rng(2)
    models = [_Net("2d"), _Net("2d")]
    models[1].set_state_dict(models[0].state_dict())
    # (SGD: Adam's normalized steps would turn float32 round-off in gradients near
    # zero, the xla backend's own, into visible differences)
    opts = [d2s.optimizer.SGD(0.05, parameters=m.parameters()) for m in models]

    def make(model, opt):
        def step(x):
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return step

    static = to_static(make(models[0], opts[0]), backend=_backend(backend))
    eager = make(models[1], opts[1])
    for i in range(5):
        x = _input("2d", rng)
        np.testing.assert_allclose(static(x).numpy(), eager(x).numpy(), rtol=1e-5)
        assert isinstance(static.get_concrete_program(x), StepProgram)
        for a, b in zip(models[0].buffers(), models[1].buffers()):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)
    assert_no_variables_left(("model", models[0]))


def test_batchnorm2d_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    ours = nn.BatchNorm2D(3, momentum=0.9, epsilon=1e-5)
    theirs = torch.nn.BatchNorm2d(3, momentum=0.1, eps=1e-5)
    w, b = rng.standard_normal(3).astype("float32"), rng.standard_normal(3).astype("float32")
    ours.set_state_dict({"weight": w, "bias": b, "_mean": np.zeros(3, "float32"),
                         "_variance": np.ones(3, "float32")})
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(w))
        theirs.bias.copy_(torch.from_numpy(b))
    static = to_static(ours)
    mean, var = np.zeros(3), np.ones(3)
    for step in range(4):
        x = rng.standard_normal((4, 3, 2, 5)).astype("float32") * 3 + 1
        xs = t(x, grad=True)
        xt = torch.from_numpy(x).requires_grad_(True)
        ys, yt = static(xs), theirs(xt)
        np.testing.assert_allclose(ys.numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
        (ys * ys).sum().backward()
        (yt * yt).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=1e-4, atol=1e-4)
        ours.weight.clear_grad()
        theirs.weight.grad = None
        np.testing.assert_allclose(ours._mean.numpy(), theirs.running_mean.numpy(), rtol=1e-5,
                                   atol=1e-6)
        # the variance: PaddlePaddle's rule (biased), where torch accumulates the unbiased one
        _, mean, var = reference(x.astype("float64"), mean, var, w, b, True, 0.9, 1e-5, 1)
        np.testing.assert_allclose(ours._variance.numpy(), var, rtol=1e-5)
    ours.eval(), theirs.eval()
    x = rng.standard_normal((2, 3, 2, 5)).astype("float32")
    want, _, _ = reference(x.astype("float64"), mean, var, w, b, False, 0.9, 1e-5, 1)
    np.testing.assert_allclose(static(t(x)).numpy(), want, rtol=1e-4, atol=1e-5)


# ---- buffers ---------------------------------------------------------------------------

class _WithBuffers(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.register_buffer("steps", d2s.to_tensor(np.asarray([0], dtype="int64")))
        self.register_buffer("scratch", t([0.0, 0.0]), persistable=False)
        self.bn = nn.BatchNorm1D(2)


def test_buffers_in_state_dict_named_buffers_and_set_state_dict():
    layer = _WithBuffers()
    assert [n for n, _ in layer.named_buffers()] == ["steps", "scratch", "bn._mean",
                                                     "bn._variance"]
    assert len(layer.buffers()) == 4
    keys = list(layer.state_dict())
    assert keys == ["fc.weight", "fc.bias", "bn.weight", "bn.bias", "steps", "bn._mean",
                    "bn._variance"]
    assert "scratch" not in keys and not layer.steps.stop_gradient is False
    assert layer.parameters() == [layer.fc.weight, layer.fc.bias, layer.bn.weight,
                                  layer.bn.bias]
    other = _WithBuffers()
    sd = {k: v.numpy() + 1 for k, v in layer.state_dict().items()}
    other.set_state_dict(sd)
    np.testing.assert_array_equal(other.bn._variance.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(other.steps.numpy(), [1])
    layer.steps = d2s.to_tensor(np.asarray([5], dtype="int64"))  # stays a buffer
    assert dict(layer.named_buffers())["steps"] is layer.steps
    with pytest.raises(TypeError, match="buffer"):
        layer.steps = 3
    with pytest.raises(TypeError, match="Tensor or None"):
        layer.register_buffer("bad", [1.0])
    with pytest.raises(KeyError, match="already has"):
        layer.register_buffer("fc", t([1.0]))


def test_save_and_load_keep_the_buffers(tmp_path):
    rng = np.random.default_rng(4)
    net = _Net("2d")
    to_static(net)
    for _ in range(3):
        net(_input("2d", rng))  # the statistics move
    spec = [d2s.static.InputSpec([None, 3, 3, 3], "float32")]
    with pytest.raises(TypeError, match=r"writes state.*eval\(\)"):
        d2s.jit.save(net, str(tmp_path / "train"), input_spec=spec)
    net.eval()
    d2s.jit.save(net, str(tmp_path / "m"), input_spec=spec)
    loaded = d2s.jit.load(str(tmp_path / "m"))
    x = _input("2d", rng)
    np.testing.assert_allclose(loaded(x).numpy(), net(x).numpy(), rtol=1e-6)
    fresh = _Net("2d")
    fresh.eval()
    assert not np.allclose(fresh(x).numpy(), net(x).numpy())
