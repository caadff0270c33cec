"""Automatic mixed precision (`d2s.amp`, issue 28): auto_cast's per-op
dtypes (white list in float16/bfloat16, black list in float32, the rest
promoted), GradScaler's dynamic loss scaling against a numpy reference of
Paddle's `update_loss_scaling` rule, skipped steps on inf gradients, and
the whole AMP training step converted by `to_static` equal to eager (bitwise
on numpy) on the numpy and xla backends."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static

BACKENDS = ["numpy", "xla"]


def _backend(name):
    if name == "xla":
        pytest.importorskip("jax")
    return name


def t(a, grad=False, dtype="float32"):
    return d2s.to_tensor(np.asarray(a, dtype=dtype), stop_gradient=not grad)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_auto_cast_op_dtypes(dtype):
    if dtype == "bfloat16" and d2s.bfloat16 is None:
        pytest.skip("ml_dtypes not installed")
    low = np.dtype(d2s.bfloat16 if dtype == "bfloat16" else "float16")
    rng = np.random.default_rng(0)
    x = t(rng.standard_normal((2, 3, 6, 6)))
    conv = nn.Conv2D(3, 4, 3)
    a, b = t(rng.standard_normal((4, 5))), t(rng.standard_normal((5, 3)))
    with d2s.amp.auto_cast(dtype=dtype):
        assert d2s.matmul(a, b).dtype == low                  # white
        y = conv(x)                                           # conv (white) + bias (fp32): promoted
        assert y.dtype == np.float32
        assert F.conv2d(x, conv.weight).dtype == low
        h = d2s.matmul(a, b)
        assert F.softmax(h).dtype == np.float32               # black
        assert d2s.sum(h).dtype == np.float32
        assert d2s.exp(h).dtype == np.float32
        assert (h * 2.0).dtype == low                         # gray, all low: stays low
        assert (h + t(np.ones(3))).dtype == np.float32        # gray with a float32 input
        with d2s.amp.auto_cast(enable=False):
            assert d2s.matmul(a, b).dtype == np.float32
    assert d2s.matmul(a, b).dtype == np.float32               # off again after the block
    # O2: gray ops run low too; the black list stays float32
    with d2s.amp.auto_cast(level="O2", dtype=dtype):
        assert (a + 1.0).dtype == low
        assert F.softmax(a).dtype == np.float32
    # custom lists move ops (Paddle's op names accepted)
    with d2s.amp.auto_cast(custom_black_list=["matmul_v2"], custom_white_list=["exp"],
                           dtype=dtype):
        assert d2s.matmul(a, b).dtype == np.float32
        assert d2s.exp(a).dtype == low


def test_auto_cast_values_and_grads_close_to_float32():
    """The white-list op's value in float16 is the float32 value rounded; the
    gradient reaches the float32 parameter in float32."""
    rng = np.random.default_rng(1)
    xa, wa = rng.standard_normal((4, 8)).astype("float32"), rng.standard_normal((8, 3)).astype(
        "float32")
    x, w = t(xa), t(wa, grad=True)
    with d2s.amp.auto_cast():
        y = d2s.matmul(x, w)
        loss = d2s.mean(y * y)
    assert y.dtype == np.float16 and loss.dtype == np.float32
    ref = xa.astype(np.float16).astype(np.float32) @ wa.astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(y.numpy().astype(np.float32), ref, rtol=2e-3, atol=2e-3)
    loss.backward()
    assert w.grad.dtype == np.float32
    g_ref = xa.T @ (2 * (xa @ wa) / y.size)
    np.testing.assert_allclose(w.grad.numpy(), g_ref, rtol=2e-2, atol=2e-2)


def test_bad_arguments():
    with pytest.raises(ValueError, match="level"):
        with d2s.amp.auto_cast(level="O3"):
            pass
    with pytest.raises(ValueError, match="float16"):
        with d2s.amp.auto_cast(dtype="int8"):
            pass
    with pytest.raises(ValueError, match="incr_ratio"):
        d2s.amp.GradScaler(incr_ratio=0.5)


def _scale_reference(found_seq, scale, incr_n, decr_n, incr_ratio=2.0, decr_ratio=0.5):
    """Paddle's update_loss_scaling rule, step by step in plain Python."""
    good = bad = 0
    out = []
    for found in found_seq:
        if found:
            good, bad = 0, bad + 1
            if bad == decr_n:
                scale, bad = max(scale * decr_ratio, 1.0), 0
        else:
            good, bad = good + 1, 0
            if good == incr_n:
                grown = np.float32(scale * incr_ratio)
                scale, good = (float(grown) if np.isfinite(grown) else scale), 0
        out.append(scale)
    return out


def test_grad_scaler_dynamic_scale_and_skipped_steps():
    w0 = np.array([1.0, -2.0, 3.0], np.float32)
    w = t(w0, grad=True)
    opt = d2s.optimizer.SGD(0.1, parameters=[w])
    scaler = d2s.amp.GradScaler(init_loss_scaling=8.0, incr_every_n_steps=3,
                                decr_every_n_nan_or_inf=2)
    found_seq = [False, False, False, True, False, True, True, False, False, False, True, True]
    expected_scales = _scale_reference(found_seq, 8.0, 3, 2)
    ref_w = w0.copy()
    for step, bad in enumerate(found_seq):
        x = t([np.inf, 1.0, 1.0] if bad else [1.0, 2.0, 0.5])
        loss = d2s.sum(w * x)
        scaled = scaler.scale(loss)
        np.testing.assert_allclose(scaled.numpy(), loss.numpy() * float(
            scaler.get_loss_scaling().numpy()), rtol=1e-6)
        scaled.backward()
        scaler.minimize(opt, scaled)
        opt.clear_grad()
        if not bad:
            ref_w = ref_w - np.float32(0.1) * x.numpy()
        np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-6, err_msg=f"step {step}")
        assert float(scaler.get_loss_scaling().numpy()) == expected_scales[step], step
    sd = scaler.state_dict()
    other = d2s.amp.GradScaler()
    other.load_state_dict(sd)
    assert float(other.get_loss_scaling().numpy()) == expected_scales[-1]
    assert other.state_dict()["incr_count"] == sd["incr_count"]


def test_grad_scaler_unscale_then_step_update():
    w = t([1.0, 2.0], grad=True)
    opt = d2s.optimizer.SGD(1.0, parameters=[w])
    scaler = d2s.amp.GradScaler(init_loss_scaling=1024.0)
    scaler.scale(d2s.sum(w * t([3.0, 4.0]))).backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3072.0, 4096.0])
    scaler.unscale_(opt)
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 4.0])
    with pytest.raises(RuntimeError, match="unscale_"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step"):
        scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(w.numpy(), [-2.0, -2.0])


class _Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(2, 3, 3, padding=1)
        self.fc = nn.Linear(3 * 4 * 4, 2)

    def forward(self, x):
        return self.fc(d2s.flatten(F.relu(self.conv(x)), 1))


def _make(seed):
    d2s.seed(seed)
    net = _Net()
    opt = d2s.optimizer.Adam(0.01, parameters=net.parameters())
    scaler = d2s.amp.GradScaler(init_loss_scaling=2.0 ** 10, incr_every_n_steps=2)
    return net, opt, scaler


def _train_step(net, opt, scaler, x, y):
    with d2s.amp.auto_cast():
        out = net(x)
        loss = F.cross_entropy(out, y)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.minimize(opt, scaled)
    opt.clear_grad()
    return loss


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # the inf step, on purpose
@pytest.mark.parametrize("backend", BACKENDS)
def test_converted_amp_step_equals_eager(backend):
    """The whole step (auto_cast forward, scaled backward, gated Adam update,
    scale update) converted; steps with an inf input are skipped in both."""
    eager = _make(3)
    static = _make(3)
    static[0].set_state_dict(eager[0].state_dict())
    step = to_static(_train_step, backend=_backend(backend))
    rng = np.random.default_rng(2)
    check = np.testing.assert_array_equal if backend == "numpy" else (
        lambda a, b, err_msg="": np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3,
                                                            err_msg=err_msg))
    w_before = eager[0].fc.weight.numpy().copy()
    for i in range(6):
        xa = rng.standard_normal((4, 2, 4, 4)).astype("float32")
        if i == 2:
            xa[0, 0, 0, 0] = np.inf
        y = d2s.to_tensor(rng.integers(0, 2, (4,)).astype("int64"))
        le = _train_step(*eager, t(xa), y)
        ls = step(*static, t(xa), y)
        if i != 2:
            check(ls.numpy(), le.numpy(), err_msg=f"loss {i}")
        for (name, pe), ps in zip(eager[0].named_parameters(), static[0].parameters()):
            check(ps.numpy(), pe.numpy(), err_msg=f"{name} after step {i}")
        check(static[2].get_loss_scaling().numpy(), eager[2].get_loss_scaling().numpy())
        if i == 2:  # skipped: weights as before, scale halved
            np.testing.assert_array_equal(eager[0].fc.weight.numpy(), w_before)
        w_before = eager[0].fc.weight.numpy().copy()
    # 2 good steps (x2), inf (/2), 3 good (x2 once, one counted)
    assert float(eager[2].get_loss_scaling().numpy()) == 2.0 ** 10 * 2 / 2 * 2


def test_amp_training_close_to_float32():
    """Ten SGD steps of the small net under O1 + GradScaler track float32 training."""
    runs = []
    for amp in (False, True):
        d2s.seed(5)
        net = _Net()
        opt = d2s.optimizer.SGD(0.05, parameters=net.parameters())
        scaler = d2s.amp.GradScaler(enable=amp, init_loss_scaling=256.0)
        rng = np.random.default_rng(7)
        for _ in range(10):
            x = t(rng.standard_normal((8, 2, 4, 4)))
            y = d2s.to_tensor(rng.integers(0, 2, (8,)).astype("int64"))
            with d2s.amp.auto_cast(enable=amp):
                loss = F.cross_entropy(net(x), y)
            scaler.scale(loss).backward()
            scaler.minimize(opt, loss)
            opt.clear_grad()
        runs.append([p.numpy() for p in net.parameters()])
    for a, b in zip(*runs):
        np.testing.assert_allclose(b, a, rtol=2e-2, atol=2e-3)


def test_decorate_o2_keeps_norm_layers_float32():
    net = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1D(4), nn.Linear(4, 2))
    opt = d2s.optimizer.SGD(0.1, parameters=net.parameters())
    net2, opt2 = d2s.amp.decorate(net, opt, level="O2")
    assert net2 is net and opt2 is opt
    assert net[0].weight.dtype == np.float16 and net[2].bias.dtype == np.float16
    assert net[1].weight.dtype == np.float32
    assert opt._masters and all(m.dtype == np.float32 for _, m in opt._masters.values())


def test_converted_function_called_inside_and_outside_auto_cast():
    """The program traced inside an auto_cast block casts; the one traced
    outside does not: each call gets the program of its own policy."""
    d2s.seed(8)
    lin = nn.Linear(4, 3, bias_attr=False)
    fn = to_static(lin.forward)
    x = t(np.random.default_rng(3).standard_normal((2, 4)))
    plain = fn(x)
    with d2s.amp.auto_cast():
        low = fn(x)
        low_again = fn(x)
    after = fn(x)
    assert plain.dtype == np.float32 and after.dtype == np.float32
    assert low.dtype == np.float16 and low_again.dtype == np.float16
    np.testing.assert_array_equal(after.numpy(), plain.numpy())
    want = (x.numpy().astype(np.float16) @ lin.weight.numpy().astype(np.float16))
    np.testing.assert_array_equal(low.numpy(), want)
