"""Adadelta and Lamb (Paddle's update rules): ten steps against loop-based
numpy references of the documented formulas (and PyTorch's Adadelta, the
same rule), static `minimize` and the converted training step equal to
eager (bitwise on numpy, close on xla)."""
import numpy as np
import pytest

import d2s
from d2s import optimizer
from d2s.jit import to_static

RNG = np.random.default_rng(9)
W0 = RNG.standard_normal((4, 3))
B0 = RNG.standard_normal(3)
XS = [RNG.standard_normal((5, 4)) for _ in range(10)]


def _loss(w, b, x):
    return (d2s.tanh(d2s.matmul(x, w) + b) ** 2).sum()


def _grads_np(w, b, x):
    z = np.tanh(x @ w + b)
    dz = 2 * z * (1 - z * z)
    return x.T @ dz, dz.sum(0)


def _adadelta_ref(params, grads, state, lr, rho, eps):
    out = []
    for i, (p, g) in enumerate(zip(params, grads)):
        eg, edx = state.setdefault(i, [np.zeros_like(p), np.zeros_like(p)])
        eg = rho * eg + (1 - rho) * g * g
        u = -np.sqrt((edx + eps) / (eg + eps)) * g
        edx = rho * edx + (1 - rho) * u * u
        state[i] = [eg, edx]
        out.append(p + lr * u)
    return out


def _lamb_ref(params, grads, state, lr, wd, b1, b2, eps, t, decays, always_adapt):
    out = []
    for i, (p, g) in enumerate(zip(params, grads)):
        m, v = state.setdefault(i, [np.zeros_like(p), np.zeros_like(p)])
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        state[i] = [m, v]
        r = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
        decay = wd if decays[i] else 0.0
        r = r + decay * p
        ratio = 1.0
        if decay != 0.0 or always_adapt:
            wn, rn = np.linalg.norm(p), np.linalg.norm(r)
            if wn > 0 and rn > 0:
                ratio = wn / rn
        out.append(p - lr * ratio * r)
    return out


CASES = {
    "adadelta": (lambda ps: optimizer.Adadelta(0.5, epsilon=1e-6, rho=0.9, parameters=ps),
                 lambda ps, gs, st, t: _adadelta_ref(ps, gs, st, 0.5, 0.9, 1e-6)),
    "lamb": (lambda ps: optimizer.Lamb(0.05, lamb_weight_decay=0.1, parameters=ps),
             lambda ps, gs, st, t: _lamb_ref(ps, gs, st, 0.05, 0.1, 0.9, 0.999, 1e-6, t,
                                             [True, True], False)),
    "lamb_exclude_bias": (
        lambda ps: optimizer.Lamb(0.05, lamb_weight_decay=0.1, parameters=ps,
                                  exclude_from_weight_decay_fn=lambda p: p.name == "bias"),
        lambda ps, gs, st, t: _lamb_ref(ps, gs, st, 0.05, 0.1, 0.9, 0.999, 1e-6, t,
                                        [True, False], False)),
    "lamb_always_adapt": (
        lambda ps: optimizer.Lamb(0.05, lamb_weight_decay=0.0, beta1=0.8, beta2=0.99,
                                  epsilon=1e-8, parameters=ps, always_adapt=True),
        lambda ps, gs, st, t: _lamb_ref(ps, gs, st, 0.05, 0.0, 0.8, 0.99, 1e-8, t,
                                        [True, True], True)),
}


@pytest.mark.parametrize("kind", list(CASES))
def test_ten_steps_match_numpy_reference(kind):
    make, ref = CASES[kind]
    w, b = d2s.to_tensor(W0, stop_gradient=False), d2s.to_tensor(B0, stop_gradient=False)
    w.name, b.name = "weight", "bias"
    opt = make([w, b])
    params, state = [W0.copy(), B0.copy()], {}
    for t, x in enumerate(XS, start=1):
        _loss(w, b, d2s.to_tensor(x)).backward()
        opt.step()
        opt.clear_grad()
        params = ref(params, list(_grads_np(*params, x)), state, t)
        np.testing.assert_allclose(w.numpy(), params[0], rtol=1e-12, atol=1e-13,
                                   err_msg=f"step {t}")
        np.testing.assert_allclose(b.numpy(), params[1], rtol=1e-12, atol=1e-13)
    assert not np.allclose(w.numpy(), W0)


def test_adadelta_matches_torch():
    torch = pytest.importorskip("torch")
    wt, bt = torch.tensor(W0, requires_grad=True), torch.tensor(B0, requires_grad=True)
    topt = torch.optim.Adadelta([wt, bt], lr=0.5, rho=0.9, eps=1e-6)
    w, b = d2s.to_tensor(W0, stop_gradient=False), d2s.to_tensor(B0, stop_gradient=False)
    opt = optimizer.Adadelta(0.5, epsilon=1e-6, rho=0.9, parameters=[w, b])
    for x in XS:
        topt.zero_grad()
        (torch.tanh(torch.tensor(x) @ wt + bt) ** 2).sum().backward()
        topt.step()
        _loss(w, b, d2s.to_tensor(x)).backward()
        opt.step()
        opt.clear_grad()
    np.testing.assert_allclose(w.numpy(), wt.detach().numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(b.numpy(), bt.detach().numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("kind", ["adadelta", "lamb_exclude_bias"])
@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_step_equals_eager(kind, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    runs = []
    for convert in (False, True):
        w = d2s.to_tensor(W0.astype(np.float32), stop_gradient=False)
        b = d2s.to_tensor(B0.astype(np.float32), stop_gradient=False)
        w.name, b.name = "weight", "bias"
        opt = CASES[kind][0]([w, b])

        def step(x):
            loss = _loss(w, b, x)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        fn = to_static(step, backend=backend) if convert else step
        losses = [fn(d2s.to_tensor(x.astype(np.float32))).numpy() for x in XS[:5]]
        runs.append((losses, w.numpy(), b.numpy(),
                     [t.numpy() for _, ts in opt._state.values() for t in ts]))
    eager, conv = runs
    flat_e = eager[0] + [eager[1], eager[2]] + eager[3]
    flat_c = conv[0] + [conv[1], conv[2]] + conv[3]
    for a, c in zip(flat_e, flat_c):
        if backend == "numpy":
            np.testing.assert_array_equal(c, a)
        else:
            np.testing.assert_allclose(c, a, rtol=1e-5, atol=1e-6)


def test_static_minimize_matches_eager():
    from d2s import static
    w_e = d2s.to_tensor(W0, stop_gradient=False)
    b_e = d2s.to_tensor(B0, stop_gradient=False)
    opt_e = optimizer.Lamb(0.05, parameters=[w_e, b_e])
    w_s = d2s.to_tensor(W0, stop_gradient=False)
    b_s = d2s.to_tensor(B0, stop_gradient=False)
    opt_s = optimizer.Lamb(0.05, parameters=[w_s, b_s])
    prog = static.Program()
    with static.program_guard(prog):
        xv = static.data("x", [5, 4], "float64")
        loss = _loss(w_s, b_s, xv)
        opt_s.minimize(loss)
    exe = static.Executor()
    for x in XS[:4]:
        _loss(w_e, b_e, d2s.to_tensor(x)).backward()
        opt_e.step()
        opt_e.clear_grad()
        exe.run(prog, {"x": x}, [loss])
    np.testing.assert_array_equal(w_s.numpy(), w_e.numpy())
    np.testing.assert_array_equal(b_s.numpy(), b_e.numpy())
