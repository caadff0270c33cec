"""float32 master weights for float16 parameters (Paddle's `multi_precision`,
and `amp.decorate(level="O2")`, whose `master_weight` defaults to them):
updates too small for float16 accumulate in the master; the update equals a
numpy float32 reference fed the same gradients; converted steps equal eager
(bitwise on numpy), static `minimize` too; GradScaler's skipped steps leave
the master untouched; state dicts carry the masters."""
import numpy as np
import pytest

import d2s
from d2s import nn, optimizer
from d2s.jit import to_static

RNG = np.random.default_rng(4)
W0 = (1.0 + 0.1 * RNG.standard_normal((4, 3))).astype(np.float32)
XS = [RNG.standard_normal((5, 4)).astype(np.float16) for _ in range(8)]


def _loss(w, x):
    return (d2s.matmul(x, w) ** 2).mean()


def _f16_weight():
    w = d2s.to_tensor(W0.astype(np.float16), stop_gradient=False)
    w.name = "w"
    return w


def test_sgd_master_accumulates_updates_float16_rounds_away():
    """lr * grad ~ 1e-5 is below float16's resolution at 1.0 (~1e-3): without a
    master the weight never moves; with one it follows float32 arithmetic."""
    for multi in (False, True):
        w = _f16_weight()
        opt = optimizer.SGD(1e-5, parameters=[w], multi_precision=multi)
        ref = W0.astype(np.float16).astype(np.float32)
        for x in XS:
            _loss(w, d2s.to_tensor(x)).backward()
            g = w.grad.numpy().astype(np.float32)
            ref = ref - np.float32(1e-5) * g
            opt.step()
            opt.clear_grad()
        assert w.dtype == np.float16
        if multi:
            master = opt._masters[id(w)][1]
            assert master.dtype == np.float32
            np.testing.assert_array_equal(master.numpy(), ref)
            np.testing.assert_array_equal(w.numpy(), ref.astype(np.float16))
            assert np.any(w.numpy() != W0.astype(np.float16)) or np.all(
                ref.astype(np.float16) == W0.astype(np.float16))
        else:
            np.testing.assert_array_equal(w.numpy(), W0.astype(np.float16))
    assert np.any(ref != W0.astype(np.float16).astype(np.float32))


def test_adam_multi_precision_state_is_float32_and_matches_reference():
    w = _f16_weight()
    opt = optimizer.Adam(1e-3, parameters=[w], multi_precision=True)
    p = W0.astype(np.float16).astype(np.float32)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t, x in enumerate(XS, 1):
        _loss(w, d2s.to_tensor(x)).backward()
        g = w.grad.numpy().astype(np.float32)
        m = np.float32(b1) * m + np.float32(1 - b1) * g
        v = np.float32(b2) * v + np.float32(1 - b2) * g * g
        mhat = m / np.float32(1 - b1 ** t)
        vhat = v / np.float32(1 - b2 ** t)
        p = p - np.float32(1e-3) * mhat / (np.sqrt(vhat) + np.float32(eps))
        opt.step()
        opt.clear_grad()
    states = opt._state[id(w)][1]
    assert states[0].dtype == np.float32 and states[1].dtype == np.float32
    master = opt._masters[id(w)][1].numpy()
    np.testing.assert_allclose(master, p, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(w.numpy(), master.astype(np.float16))


def test_decorate_o2_seeds_masters_from_float32_values():
    d2s.seed(3)
    net = nn.Linear(4, 3)
    before = net.weight.numpy().copy()
    opt = optimizer.AdamW(1e-3, parameters=net.parameters())
    net, opt = d2s.amp.decorate(net, opt, level="O2")
    assert net.weight.dtype == np.float16
    master = opt._masters[id(net.weight)][1]
    np.testing.assert_array_equal(master.numpy(), before)   # not the float16 rounding
    # master_weight=False: no copies
    net2 = nn.Linear(4, 3)
    opt2 = optimizer.SGD(0.1, parameters=net2.parameters())
    d2s.amp.decorate(net2, opt2, level="O2", master_weight=False)
    assert not opt2._masters
    x = d2s.to_tensor(XS[0])
    net2(x).sum().backward()
    opt2.step()
    assert not opt2._masters and net2.weight.dtype == np.float16


def test_decorate_bad_arguments():
    net = nn.Linear(4, 3)
    with pytest.raises(ValueError, match="optimizers"):
        d2s.amp.decorate(net, level="O2", master_weight=True)
    with pytest.raises(ValueError, match="master_grad"):
        d2s.amp.decorate(net, level="O1", master_grad=True)
    with pytest.raises(NotImplementedError, match="save_dtype"):
        d2s.amp.decorate(net, level="O2", save_dtype="float32")


def _run_steps(convert, backend, opt_cls, scaler=False, master_grad=False):
    d2s.seed(11)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = opt_cls(parameters=net.parameters(),
                  grad_clip=nn.ClipGradByGlobalNorm(1.0) if master_grad else None)
    net, opt = d2s.amp.decorate(net, opt, level="O2", master_grad=master_grad)
    sc = d2s.amp.GradScaler(init_loss_scaling=2.0 ** 4) if scaler else None

    def step(x):
        with d2s.amp.auto_cast(level="O2"):
            loss = (net(x).astype("float32") ** 2).mean()
        if sc is None:
            loss.backward()
            opt.step()
        else:
            sc.scale(loss).backward()
            sc.step(opt)
            sc.update()
        opt.clear_grad()
        return loss
    fn = to_static(step, backend=backend) if convert else step
    losses = []
    for i, x in enumerate(XS[:5]):
        xx = x.astype(np.float32)
        if scaler and i == 2:
            xx = xx * np.float32(1e30)       # an inf loss: the step is skipped
        losses.append(fn(d2s.to_tensor(xx)).numpy())
    masters = [m.numpy() for _, m in opt._masters.values()]
    return losses, [p.numpy() for p in net.parameters()], masters


_INF_STEP = pytest.mark.filterwarnings(  # the skipped step's inf loss, on purpose
    "ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning")


@_INF_STEP
@pytest.mark.parametrize("case", ["sgd", "adamw_scaler", "momentum_master_grad"])
@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_step_equals_eager(case, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    opt_cls, scaler, master_grad = {
        "sgd": (lambda **k: optimizer.SGD(0.05, **k), False, False),
        "adamw_scaler": (lambda **k: optimizer.AdamW(0.01, **k), True, False),
        "momentum_master_grad": (lambda **k: optimizer.Momentum(0.05, **k), False, True),
    }[case]
    eager = _run_steps(False, backend, opt_cls, scaler, master_grad)
    conv = _run_steps(True, backend, opt_cls, scaler, master_grad)
    assert eager[2], "the optimizer kept no master weights"
    flat_e = eager[0] + eager[1] + eager[2]
    flat_c = conv[0] + conv[1] + conv[2]
    for a, c in zip(flat_e, flat_c):
        if backend == "numpy":
            np.testing.assert_array_equal(c, a)
        else:
            np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32),
                                       rtol=2e-3, atol=2e-3)


@_INF_STEP
def test_skipped_step_leaves_master_untouched():
    losses, params, masters = _run_steps(False, "numpy", lambda **k: optimizer.SGD(0.05, **k),
                                         scaler=True)
    assert not np.isfinite(losses[2])
    assert all(np.isfinite(m).all() for m in masters)


def test_static_minimize_updates_through_master():
    from d2s import static
    w_e, w_s = _f16_weight(), _f16_weight()
    opt_e = optimizer.SGD(0.05, parameters=[w_e], multi_precision=True)
    opt_s = optimizer.SGD(0.05, parameters=[w_s], multi_precision=True)
    prog = static.Program()
    with static.program_guard(prog):
        xv = static.data("x", [5, 4], "float16")
        loss = _loss(w_s, xv)
        opt_s.minimize(loss)
    exe = static.Executor()
    for x in XS[:4]:
        _loss(w_e, d2s.to_tensor(x)).backward()
        opt_e.step()
        opt_e.clear_grad()
        exe.run(prog, {"x": x}, [loss])
    assert w_s.dtype == np.float16
    np.testing.assert_array_equal(opt_s._masters[id(w_s)][1].numpy(),
                                  opt_e._masters[id(w_e)][1].numpy())
    np.testing.assert_array_equal(w_s.numpy(), w_e.numpy())


def test_state_dict_round_trip_keeps_masters():
    w = _f16_weight()
    opt = optimizer.Adam(1e-3, parameters=[w], multi_precision=True)
    for x in XS[:3]:
        _loss(w, d2s.to_tensor(x)).backward()
        opt.step()
        opt.clear_grad()
    sd = opt.state_dict()
    assert set(sd["master_weights"]) == {"w"}
    w2 = d2s.to_tensor(w.numpy(), stop_gradient=False)
    w2.name = "w"
    opt2 = optimizer.Adam(1e-3, parameters=[w2], multi_precision=True)
    opt2.set_state_dict(sd)
    np.testing.assert_array_equal(opt2._masters[id(w2)][1].numpy(), sd["master_weights"]["w"].numpy())
    for o, p in ((opt, w), (opt2, w2)):
        _loss(p, d2s.to_tensor(XS[5])).backward()
        o.step()
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    np.testing.assert_array_equal(opt2._masters[id(w2)][1].numpy(),
                                  opt._masters[id(w)][1].numpy())
