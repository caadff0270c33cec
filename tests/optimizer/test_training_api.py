"""Momentum, RMSProp, Adagrad, AdamW, weight decay, gradient clipping, ParamAttr
and learning-rate schedulers: against PyTorch and numpy references, and the
converted whole training step bitwise equal to eager on the numpy backend
(close on xla)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import optimizer
from d2s.jit import enable_to_static, to_static
from d2s.optimizer import lr as sched

RNG = np.random.default_rng(3)
W0 = RNG.standard_normal((4, 3))
B0 = RNG.standard_normal(3)
XS = [RNG.standard_normal((5, 4)) for _ in range(10)]


def _torch_opt(torch, kind, params):
    o = torch.optim
    return {
        "momentum": lambda: o.SGD(params, lr=0.1, momentum=0.9),
        "nesterov": lambda: o.SGD(params, lr=0.1, momentum=0.8, nesterov=True),
        "momentum_l2": lambda: o.SGD(params, lr=0.1, momentum=0.9, weight_decay=0.05),
        "adam": lambda: o.Adam(params, lr=0.05),
        "adamw": lambda: o.AdamW(params, lr=0.05, weight_decay=0.1),
        "adagrad": lambda: o.Adagrad(params, lr=0.1, eps=1e-6),
        "adamax": lambda: o.Adamax(params, lr=0.05, eps=1e-30),
        "rmsprop": lambda: o.RMSprop(params, lr=0.01, alpha=0.9, eps=1e-12, momentum=0.5),
        "rmsprop_centered": lambda: o.RMSprop(params, lr=0.01, alpha=0.9, eps=1e-12,
                                              centered=True),
    }[kind]()


def _d2s_opt(kind, params):
    return {
        "momentum": lambda: optimizer.Momentum(0.1, 0.9, parameters=params),
        "nesterov": lambda: optimizer.Momentum(0.1, 0.8, parameters=params, use_nesterov=True),
        "momentum_l2": lambda: optimizer.Momentum(0.1, 0.9, parameters=params,
                                                  weight_decay=d2s.regularizer.L2Decay(0.05)),
        "adam": lambda: optimizer.Adam(0.05, parameters=params),
        "adamw": lambda: optimizer.AdamW(0.05, parameters=params, weight_decay=0.1),
        "adagrad": lambda: optimizer.Adagrad(0.1, epsilon=1e-6, parameters=params),
        "adamax": lambda: optimizer.Adamax(0.05, epsilon=1e-30, parameters=params),
        "rmsprop": lambda: optimizer.RMSProp(0.01, rho=0.9, epsilon=1e-24, momentum=0.5,
                                             parameters=params),
        "rmsprop_centered": lambda: optimizer.RMSProp(0.01, rho=0.9, epsilon=1e-24,
                                                      centered=True, parameters=params),
    }[kind]()


def _loss_d2s(w, b, x):
    return (d2s.tanh(d2s.matmul(x, w) + b) ** 2).sum()


@pytest.mark.parametrize("kind", ["momentum", "nesterov", "momentum_l2", "adam", "adamw",
                                  "adagrad", "adamax", "rmsprop", "rmsprop_centered"])
def test_ten_steps_match_torch(kind):
    torch = pytest.importorskip("torch")
    tw, tb = torch.tensor(W0, requires_grad=True), torch.tensor(B0, requires_grad=True)
    topt = _torch_opt(torch, kind, [tw, tb])
    w, b = d2s.to_tensor(W0, stop_gradient=False), d2s.to_tensor(B0, stop_gradient=False)
    opt = _d2s_opt(kind, [w, b])
    for x in XS:
        topt.zero_grad()
        (torch.tanh(torch.tensor(x) @ tw + tb) ** 2).sum().backward()
        topt.step()
        _loss_d2s(w, b, d2s.to_tensor(x)).backward()
        opt.step()
        opt.clear_grad()
    # (RMSProp's epsilon sits inside the root in Paddle, outside in torch: both tiny here)
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(b.numpy(), tb.detach().numpy(), rtol=1e-9, atol=1e-11)


def test_gradient_clipping_matches_numpy():
    g1, g2 = RNG.standard_normal((3, 2)), RNG.standard_normal(4)
    p1, p2 = (d2s.to_tensor(np.zeros_like(g), stop_gradient=False) for g in (g1, g2))
    pairs = [(p1, d2s.to_tensor(g1)), (p2, d2s.to_tensor(g2))]
    total = np.sqrt((g1 ** 2).sum() + (g2 ** 2).sum())
    out = nn.ClipGradByGlobalNorm(1.0)(pairs)
    for (_, g), ref in zip(out, (g1, g2)):
        np.testing.assert_allclose(g.numpy(), ref / total, rtol=1e-12)
    out = nn.ClipGradByGlobalNorm(100.0)(pairs)  # below the limit: unchanged
    np.testing.assert_allclose(out[0][1].numpy(), g1, rtol=1e-15)
    out = nn.ClipGradByNorm(0.5)(pairs)
    for (_, g), ref in zip(out, (g1, g2)):
        np.testing.assert_allclose(g.numpy(), ref * 0.5 / max(np.linalg.norm(ref), 0.5))
    out = nn.ClipGradByValue(0.3)(pairs)
    np.testing.assert_array_equal(out[1][1].numpy(), np.clip(g2, -0.3, 0.3))


def test_weight_decay_paramattr_and_clipping_in_sgd_steps():
    """SGD with L1 decay, a per-parameter rate scale and regularizer, and a
    parameter left out of clipping, against the formula."""
    lin = nn.Linear(4, 3, weight_attr=d2s.ParamAttr(learning_rate=0.5),
                    bias_attr=d2s.ParamAttr(regularizer=d2s.regularizer.L2Decay(0.3),
                                            need_clip=False))
    w0, b0 = lin.weight.numpy().copy(), lin.bias.numpy().copy()
    opt = optimizer.SGD(0.1, lin.parameters(), weight_decay=d2s.regularizer.L1Decay(0.2),
                        grad_clip=nn.ClipGradByValue(0.05))
    x = d2s.to_tensor(XS[0].astype(np.float32))
    lin(x).sum().backward()
    gw, gb = lin.weight.grad.numpy(), lin.bias.grad.numpy()
    opt.step()
    want_w = w0 - np.float32(0.1 * 0.5) * (np.clip(gw, -0.05, 0.05) + 0.2 * np.sign(w0))
    want_b = b0 - np.float32(0.1) * (gb + np.float32(0.3) * b0)
    np.testing.assert_allclose(lin.weight.numpy(), want_w, rtol=1e-6)
    np.testing.assert_allclose(lin.bias.numpy(), want_b, rtol=1e-6)
    assert lin.weight.grad.numpy() is gw  # `.grad` itself is left as backward made it


def test_adamw_skips_decay_where_asked_and_scales_rates():
    a = d2s.to_tensor(np.ones(2), stop_gradient=False)
    a.name = "keep_bias"
    c = d2s.to_tensor(np.ones(2), stop_gradient=False)
    c.name = "decay_w"
    opt = optimizer.AdamW(0.1, parameters=[a, c], weight_decay=0.5,
                          apply_decay_param_fun=lambda n: n.startswith("decay"),
                          lr_ratio=lambda p: 2.0 if p.name == "decay_w" else 1.0)
    (a * 0.0).sum().backward()
    (c * 0.0).sum().backward()
    opt.step()
    # zero gradients: only the decay moves a parameter
    np.testing.assert_array_equal(a.numpy(), np.ones(2))
    np.testing.assert_allclose(c.numpy(), np.ones(2) * (1 - 0.1 * 2.0 * 0.5))


# ---- the converted whole step: bitwise eager on numpy ------------------------------------------
class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(2, 3, 3, padding=1, weight_attr=d2s.ParamAttr(learning_rate=0.5))
        self.fc = nn.Linear(3, 4)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


def _optimizers(params):
    return {
        "momentum_clip": lambda: optimizer.Momentum(
            0.05, 0.9, params, use_nesterov=True, weight_decay=1e-3,
            grad_clip=nn.ClipGradByGlobalNorm(0.5)),
        "adamw_sched": lambda: optimizer.AdamW(
            sched.LinearWarmup(sched.CosineAnnealingDecay(0.01, 10), 3, 0.0, 0.01),
            parameters=params, weight_decay=0.05, grad_clip=nn.ClipGradByNorm(0.3),
            apply_decay_param_fun=lambda n: "b_" not in n),
        "rmsprop": lambda: optimizer.RMSProp(0.01, momentum=0.3, centered=True,
                                             parameters=params,
                                             grad_clip=nn.ClipGradByValue(0.1)),
        "adagrad_l1": lambda: optimizer.Adagrad(0.05, parameters=params,
                                                weight_decay=d2s.regularizer.L1Decay(1e-3)),
        "adamax": lambda: optimizer.Adamax(0.01, parameters=params),
        "adam_l2": lambda: optimizer.Adam(sched.StepDecay(0.01, 2, 0.5), parameters=params,
                                          weight_decay=0.01),
    }


DATA = [(RNG.standard_normal((4, 2, 6, 6)).astype(np.float32), RNG.integers(0, 4, 4))
        for _ in range(3)]


def _train(kind, static, steps=6):
    d2s.seed(1)
    model = Net()
    opt = _optimizers(model.parameters())[kind]()

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        model.clear_gradients()
        return loss
    fn = to_static(step)
    enable_to_static(static)
    try:
        losses = []
        for i in range(steps):
            x, y = DATA[i % len(DATA)]
            losses.append(fn(d2s.to_tensor(x), d2s.to_tensor(y)).numpy().copy())
            if opt._scheduler is not None:
                opt._scheduler.step()
    finally:
        enable_to_static(True)
    state = [t.numpy().copy() for _, ts in opt._state.values() for t in ts]
    return losses, [p.numpy().copy() for p in model.parameters()], state, opt.get_lr()


@pytest.mark.parametrize("kind", ["momentum_clip", "adamw_sched", "rmsprop", "adagrad_l1",
                                  "adamax", "adam_l2"])
@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_step_equals_eager(kind, backend, monkeypatch):
    if backend == "xla":
        pytest.importorskip("jax")
        monkeypatch.setenv("D2S_XLA_SYNC", "1")
    eager = _train(kind, static=False)
    previous = d2s.jit.get_backend()
    d2s.jit.set_backend(backend)
    try:
        conv = _train(kind, static=True)
    finally:
        d2s.jit.set_backend(previous)
    assert eager[3] == conv[3]
    for a, b in zip(eager[0] + eager[1] + eager[2], conv[0] + conv[1] + conv[2]):
        if backend == "numpy":
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.array_equal(eager[1][0], _fresh_conv_weight())  # it trained


def _fresh_conv_weight():
    d2s.seed(1)
    return Net().conv.weight.numpy()


# ---- schedulers -------------------------------------------------------------------------------
def _rates(s, n=12):
    out = [s()]
    for _ in range(n - 1):
        s.step()
        out.append(s())
    return np.array(out)


def test_schedulers_follow_their_formulas():
    e = np.arange(12)
    np.testing.assert_allclose(_rates(sched.StepDecay(0.5, 3, 0.1)), 0.5 * 0.1 ** (e // 3))
    np.testing.assert_allclose(_rates(sched.MultiStepDecay(0.5, [2, 5], 0.5)),
                               0.5 * 0.5 ** ((e >= 2).astype(int) + (e >= 5)))
    np.testing.assert_allclose(_rates(sched.ExponentialDecay(0.5, 0.9)), 0.5 * 0.9 ** e)
    np.testing.assert_allclose(_rates(sched.NaturalExpDecay(0.5, 0.1)), 0.5 * np.exp(-0.1 * e))
    np.testing.assert_allclose(_rates(sched.InverseTimeDecay(0.5, 0.1)), 0.5 / (1 + 0.1 * e))
    np.testing.assert_allclose(_rates(sched.CosineAnnealingDecay(0.5, 10, 0.1)),
                               0.1 + 0.4 * (1 + np.cos(np.pi * e / 10)) / 2)
    np.testing.assert_allclose(_rates(sched.PiecewiseDecay([3, 6], [1.0, 0.5, 0.1])),
                               np.where(e < 3, 1.0, np.where(e < 6, 0.5, 0.1)))
    np.testing.assert_allclose(_rates(sched.LambdaDecay(0.5, lambda k: 0.9 ** k)),
                               0.5 * 0.9 ** e)
    np.testing.assert_allclose(_rates(sched.PolynomialDecay(0.5, 8, 0.1, 2.0)),
                               (0.5 - 0.1) * (1 - np.minimum(e, 8) / 8) ** 2 + 0.1)
    n = np.maximum(e, 1)
    np.testing.assert_allclose(_rates(sched.NoamDecay(64, 4, 2.0)),
                               2.0 * 64 ** -0.5 * np.minimum(n ** -0.5, n * 4 ** -1.5))
    np.testing.assert_allclose(_rates(sched.LinearWarmup(0.5, 4, 0.0, 0.4)),
                               np.where(e < 4, 0.4 * e / 4, 0.5))


def test_schedulers_match_torch():
    torch = pytest.importorskip("torch")
    p = torch.zeros(1, requires_grad=True)
    pairs = [
        (sched.StepDecay(0.5, 3, 0.1), lambda o: torch.optim.lr_scheduler.StepLR(o, 3, 0.1)),
        (sched.CosineAnnealingDecay(0.5, 7, 0.05),
         lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 7, 0.05)),
        (sched.CosineAnnealingWarmRestarts(0.5, 3, 2, 0.01),
         lambda o: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 3, 2, 0.01)),
        (sched.OneCycleLR(1.0, 12, end_learning_rate=1.0 / 25 / 1e4, anneal_strategy="linear"),
         lambda o: torch.optim.lr_scheduler.OneCycleLR(o, 1.0, total_steps=12,
                                                       anneal_strategy="linear",
                                                       cycle_momentum=False)),
    ]
    for ours, make in pairs:
        topt = torch.optim.SGD([p], lr=0.5)
        ts = make(topt)
        want = []
        for _ in range(11):
            want.append(topt.param_groups[0]["lr"])
            topt.step()
            ts.step()
        np.testing.assert_allclose(_rates(ours, 11), want, rtol=1e-10, atol=1e-12)


def test_reduce_on_plateau():
    s = sched.ReduceOnPlateau(1.0, factor=0.5, patience=1)
    for loss in [3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0]:
        s.step(loss)
    assert s() == 0.25


def test_an_optimizer_follows_its_scheduler_and_checkpoints():
    w = d2s.to_tensor(np.ones(2), stop_gradient=False)
    s = sched.ExponentialDecay(0.5, 0.5)
    opt = optimizer.Adam(s, parameters=[w])
    assert opt.get_lr() == 0.5
    s.step()
    assert opt.get_lr() == 0.25
    with pytest.raises(RuntimeError, match="LRScheduler"):
        opt.set_lr(0.1)
    (w * w).sum().backward()
    opt.step()
    saved = {k: (v.numpy().copy() if hasattr(v, "numpy") else dict(v))
             for k, v in opt.state_dict().items()}
    assert saved["LR_Scheduler"] == {"last_epoch": 1, "last_lr": 0.25}
    w2 = d2s.to_tensor(np.ones(2), stop_gradient=False)
    w2.name = w.name
    s2 = sched.ExponentialDecay(0.5, 0.5)
    opt2 = optimizer.Adam(s2, parameters=[w2])
    opt2.set_state_dict(saved)
    assert s2.last_epoch == 1 and opt2.get_lr() == 0.25
    for key, value in saved.items():
        if key != "LR_Scheduler":
            np.testing.assert_array_equal(opt2.state_dict()[key].numpy(), value)


def test_a_scheduler_stepped_inside_a_converted_function_steps_on_every_run():
    s = sched.StepDecay(0.1, 2)
    eager = sched.StepDecay(0.1, 2)

    @to_static
    def f(x):
        s.step()
        return x + 1

    @to_static
    def g(x):
        before = s()
        s.step()
        return x * before, x * s.last_lr   # the rate before and after this run's step

    for _ in range(5):
        f(d2s.to_tensor(np.ones(2)))
        eager.step()
        assert (s.last_epoch, s.last_lr) == (eager.last_epoch, eager.last_lr)
    for _ in range(3):
        before, after = g(d2s.to_tensor(np.ones(2)))
        rate = eager.last_lr
        eager.step()
        np.testing.assert_allclose(before.numpy(), [rate] * 2)
        np.testing.assert_allclose(after.numpy(), [eager.last_lr] * 2)
        assert type(s.last_lr) is float
    plateau = sched.ReduceOnPlateau(0.1)

    @to_static
    def g(x):
        plateau.step(x.sum())
        return x + 1

    with pytest.raises(Exception, match="ReduceOnPlateau.step\\(\\).*in eager code"):
        g(d2s.to_tensor(np.ones(2)))


def test_bad_arguments_are_clear_errors():
    w = d2s.to_tensor(np.ones(2), stop_gradient=False)
    with pytest.raises(TypeError, match="weight_decay"):
        optimizer.SGD(0.1, [w], weight_decay="l2")
    with pytest.raises(TypeError, match="grad_clip"):
        optimizer.SGD(0.1, [w], grad_clip=1.0)
    with pytest.raises(NotImplementedError, match="parameter groups"):
        optimizer.Adam(0.1, parameters=[{"params": [w]}])
    with pytest.raises(ValueError, match="boundaries"):
        sched.PiecewiseDecay([1, 2], [0.1])


@pytest.mark.parametrize("kind", ["momentum_clip", "adamw_sched", "adagrad_l1"])
def test_static_minimize_with_clipping_decay_and_rate_scales_matches_eager(kind):
    """`minimize` in a static program appends the same clipping, decay and
    per-parameter rates as eager `step()`."""
    from d2s import static

    def train(use_static):
        d2s.seed(1)
        model = Net()
        opt = _optimizers(model.parameters())[kind]()
        if use_static:
            prog = static.Program()
            with static.program_guard(prog):
                x = static.data("x", [None, 2, 6, 6])
                y = static.data("y", [None], "int64")
                loss = F.cross_entropy(model(x), y)
                opt.minimize(loss)
            exe = static.Executor()
        losses = []
        for i in range(4):
            xb, yb = DATA[i % len(DATA)]
            if use_static:
                losses.append(float(exe.run(prog, {"x": xb, "y": yb}, [loss])[0]))
            else:
                out = F.cross_entropy(model(d2s.to_tensor(xb)), d2s.to_tensor(yb))
                out.backward()
                opt.step()
                opt.clear_grad()
                losses.append(float(out))
        return losses, [p.numpy().copy() for p in model.parameters()]
    eager, static_run = train(False), train(True)
    np.testing.assert_allclose(static_run[0], eager[0], rtol=1e-5)
    for a, b in zip(static_run[1], eager[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
