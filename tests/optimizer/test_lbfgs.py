"""LBFGS (PyTorch's algorithm; fixed steps or strong Wolfe): `step(closure)` calls
give PyTorch's parameters and losses on a small least-squares + tanh
problem (history shorter than the iterations, so pairs are dropped); bad
uses are clear errors."""
import numpy as np
import pytest

import d2s
from d2s import optimizer
from d2s.jit import to_static

RNG = np.random.default_rng(8)
A = RNG.standard_normal((6, 3))
Y = RNG.standard_normal(6)
W0 = RNG.standard_normal(3) * 0.1
B0 = np.array([0.2])


def _problem(lib, w, b):
    return ((lib.tanh(lib.matmul(lib_t(lib, A), w) + b) - lib_t(lib, Y)) ** 2).sum() \
        + 0.1 * (w ** 2).sum()


def lib_t(lib, a):
    return d2s.to_tensor(a) if lib is d2s else lib.tensor(a)


@pytest.mark.parametrize("kw", [dict(learning_rate=0.5, max_iter=7, history_size=3),
                                dict(learning_rate=1.0, max_iter=4, max_eval=3),
                                dict(learning_rate=1.0, max_iter=6, history_size=4,
                                     line_search_fn="strong_wolfe")])
def test_steps_match_torch(kw):
    torch = pytest.importorskip("torch")
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        wt, bt = torch.tensor(W0, requires_grad=True), torch.tensor(B0, requires_grad=True)
        topt = torch.optim.LBFGS([wt, bt], lr=kw["learning_rate"], max_iter=kw["max_iter"],
                                 max_eval=kw.get("max_eval"),
                                 history_size=kw.get("history_size", 100),
                                 line_search_fn=kw.get("line_search_fn"))

        def tclosure():
            topt.zero_grad()
            loss = _problem(torch, wt, bt)
            loss.backward()
            return loss
        w = d2s.to_tensor(W0, stop_gradient=False)
        b = d2s.to_tensor(B0, stop_gradient=False)
        opt = optimizer.LBFGS(parameters=[w, b], **kw)

        def closure():
            opt.clear_grad()
            loss = _problem(d2s, w, b)
            loss.backward()
            return loss
        for _ in range(3):
            lt = topt.step(tclosure)
            ld = opt.step(closure)
            np.testing.assert_allclose(float(ld), float(lt), rtol=1e-10)
            np.testing.assert_allclose(w.numpy(), wt.detach().numpy(), rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(b.numpy(), bt.detach().numpy(), rtol=1e-9, atol=1e-12)
        assert float(closure()) < float(_problem(d2s, d2s.to_tensor(W0), d2s.to_tensor(B0)))
    finally:
        torch.set_default_dtype(saved)


def test_bad_uses():
    w = d2s.to_tensor(W0, stop_gradient=False)
    with pytest.raises(ValueError, match="line_search_fn"):
        optimizer.LBFGS(parameters=[w], line_search_fn="backtracking")
    opt = optimizer.LBFGS(parameters=[w])
    with pytest.raises(TypeError, match="closure"):
        opt.step()

    def closure():
        opt.clear_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    def converted_step(x):
        return opt.step(closure) + x
    with pytest.raises(Exception, match="LBFGS.step inside a function converted"):
        to_static(converted_step)(d2s.to_tensor(np.zeros(1)))
