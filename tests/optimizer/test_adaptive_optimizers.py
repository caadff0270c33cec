"""NAdam, RAdam, Rprop (PyTorch's rules: ten steps against torch.optim with
the same parameters and gradients) and Paddle's ASGD (against a loop-based
numpy reference of its documented rule); the converted training step equals
eager on numpy (bitwise) and xla; static `minimize` equals eager."""
import numpy as np
import pytest

import d2s
from d2s import optimizer
from d2s.jit import to_static

RNG = np.random.default_rng(4)
W0 = RNG.standard_normal((4, 3))
B0 = RNG.standard_normal(3)
XS = [RNG.standard_normal((5, 4)) for _ in range(10)]

D2S = {
    "nadam": lambda ps: optimizer.NAdam(0.05, momentum_decay=0.004, parameters=ps),
    "nadam_decay": lambda ps: optimizer.NAdam(0.05, beta1=0.8, beta2=0.99, epsilon=1e-6,
                                              momentum_decay=0.01, parameters=ps,
                                              weight_decay=0.1),
    "radam": lambda ps: optimizer.RAdam(0.05, parameters=ps),
    "radam_short": lambda ps: optimizer.RAdam(0.05, beta2=0.9, parameters=ps),  # rho_t > 5 at t=6
    "rprop": lambda ps: optimizer.Rprop(0.05, learning_rate_range=(1e-3, 0.2), parameters=ps,
                                        etas=(0.4, 1.3)),
}
TORCH = {
    "nadam": lambda t, ps: t.optim.NAdam(ps, lr=0.05, momentum_decay=0.004),
    "nadam_decay": lambda t, ps: t.optim.NAdam(ps, lr=0.05, betas=(0.8, 0.99), eps=1e-6,
                                               momentum_decay=0.01, weight_decay=0.1),
    "radam": lambda t, ps: t.optim.RAdam(ps, lr=0.05),
    "radam_short": lambda t, ps: t.optim.RAdam(ps, lr=0.05, betas=(0.9, 0.9)),
    "rprop": lambda t, ps: t.optim.Rprop(ps, lr=0.05, etas=(0.4, 1.3), step_sizes=(1e-3, 0.2)),
}


def _loss(w, b, x):
    return (d2s.tanh(d2s.matmul(x, w) + b) ** 2).sum()


def _params(dtype=np.float64):
    w = d2s.to_tensor(W0.astype(dtype), stop_gradient=False)
    b = d2s.to_tensor(B0.astype(dtype), stop_gradient=False)
    w.name, b.name = "weight", "bias"
    return w, b


@pytest.mark.parametrize("kind", list(D2S))
def test_ten_steps_match_torch(kind):
    torch = pytest.importorskip("torch")
    # torch keeps its step count and NAdam's momentum product in the default
    # dtype: float64 here, as d2s keeps them
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        _compare_with_torch(torch, kind)
    finally:
        torch.set_default_dtype(saved)


def _compare_with_torch(torch, kind):
    wt, bt = torch.tensor(W0, requires_grad=True), torch.tensor(B0, requires_grad=True)
    topt = TORCH[kind](torch, [wt, bt])
    w, b = _params()
    opt = D2S[kind]([w, b])
    for t, x in enumerate(XS, start=1):
        topt.zero_grad()
        (torch.tanh(torch.tensor(x) @ wt + bt) ** 2).sum().backward()
        topt.step()
        _loss(w, b, d2s.to_tensor(x)).backward()
        opt.step()
        opt.clear_grad()
        np.testing.assert_allclose(w.numpy(), wt.detach().numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=f"step {t}")
        np.testing.assert_allclose(b.numpy(), bt.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert not np.allclose(w.numpy(), W0)


def _grads_np(w, b, x):
    z = np.tanh(x @ w + b)
    dz = 2 * z * (1 - z * z)
    return x.T @ dz, dz.sum(0)


@pytest.mark.parametrize("batch_num,decay", [(1, None), (3, None), (3, 0.1)])
def test_asgd_matches_the_stochastic_average_gradient(batch_num, decay):
    w, b = _params()
    opt = optimizer.ASGD(0.1, batch_num=batch_num, parameters=[w, b], weight_decay=decay)
    params = [W0.copy(), B0.copy()]
    ys = [np.zeros((batch_num,) + p.shape) for p in params]
    ds = [np.zeros_like(p) for p in params]
    for m, x in enumerate(XS):
        _loss(w, b, d2s.to_tensor(x)).backward()
        opt.step()
        opt.clear_grad()
        grads = _grads_np(*params, x)
        i = m % batch_num
        for k, g in enumerate(grads):
            g = g + (decay or 0.0) * params[k]
            ds[k] = ds[k] - ys[k][i] + g
            ys[k][i] = g
            params[k] = params[k] - 0.1 * ds[k] / min(m + 1, batch_num)
        np.testing.assert_allclose(w.numpy(), params[0], rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(b.numpy(), params[1], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("kind", ["nadam", "radam_short", "rprop", "asgd"])
@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_step_equals_eager(kind, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    make = D2S.get(kind, lambda ps: optimizer.ASGD(0.1, batch_num=3, parameters=ps))
    runs = []
    for convert in (False, True):
        w, b = _params(np.float32)
        opt = make([w, b])

        def step(x):
            loss = _loss(w, b, x)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        fn = to_static(step, backend=backend) if convert else step
        # 7 steps: RAdam (beta2=0.9) crosses into its rectified branch at step 6
        losses = [fn(d2s.to_tensor(x.astype(np.float32))).numpy() for x in XS[:7]]
        runs.append(losses + [w.numpy(), b.numpy()]
                    + [t.numpy() for _, ts in opt._state.values() for t in ts])
    for a, c in zip(*runs):
        if backend == "numpy":
            np.testing.assert_array_equal(c, a)
        else:
            np.testing.assert_allclose(c, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["nadam", "rprop"])
def test_static_minimize_matches_eager(kind):
    from d2s import static
    w_e, b_e = _params()
    opt_e = D2S[kind]([w_e, b_e])
    w_s, b_s = _params()
    opt_s = D2S[kind]([w_s, b_s])
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


def test_bad_arguments_are_clear_errors():
    w, b = _params()
    with pytest.raises(ValueError, match="learning_rate_range"):
        optimizer.Rprop(1.0, learning_rate_range=(1e-5, 0.5), parameters=[w])
    with pytest.raises(ValueError, match="etas"):
        optimizer.Rprop(0.01, etas=(1.5, 1.2), parameters=[w])
    with pytest.raises(ValueError, match="batch_num"):
        optimizer.ASGD(0.01, batch_num=0, parameters=[w])
    with pytest.raises(ValueError, match="beta1"):
        optimizer.NAdam(0.01, beta1=1.0, parameters=[w])
