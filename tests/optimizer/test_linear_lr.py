"""LinearLR: the rates PyTorch's LinearLR gives over and past its ramp; an
optimizer follows it; `step(epoch)` and a checkpoint land on the same rate."""
import numpy as np
import pytest

import d2s
from d2s import optimizer
from d2s.optimizer.lr import LinearLR


@pytest.mark.parametrize("start,end,total", [(1 / 3, 1.0, 5), (1.0, 0.1, 4), (0.5, 0.0, 3)])
def test_rates_match_torch(start, end, total):
    torch = pytest.importorskip("torch")
    p = torch.zeros(1, requires_grad=True)
    topt = torch.optim.SGD([p], lr=0.5)
    ts = torch.optim.lr_scheduler.LinearLR(topt, start_factor=start, end_factor=end,
                                           total_iters=total)
    ours = LinearLR(0.5, total, start_factor=start, end_factor=end)
    for _ in range(total + 3):
        np.testing.assert_allclose(ours(), topt.param_groups[0]["lr"], rtol=1e-12)
        topt.step()
        ts.step()
        ours.step()


def test_an_optimizer_follows_it_and_it_resumes_from_a_checkpoint():
    w = d2s.to_tensor(np.ones(2), stop_gradient=False)
    sched = LinearLR(1.0, 4, start_factor=0.25)
    opt = optimizer.SGD(sched, parameters=[w])
    got = []
    for _ in range(3):
        (w * w).sum().backward()
        before = w.numpy().copy()
        opt.step()
        opt.clear_grad()
        got.append((before - w.numpy())[0] / (2 * before[0]))  # the rate used
        sched.step()
    np.testing.assert_allclose(got, [0.25, 0.4375, 0.625])
    again = LinearLR(1.0, 4, start_factor=0.25)
    again.set_state_dict(sched.state_dict())
    assert again() == sched() and again.last_epoch == 3
    again.step(10)
    assert again() == 1.0


def test_bad_arguments():
    with pytest.raises(ValueError, match="total_steps"):
        LinearLR(0.1, 0)
    with pytest.raises(ValueError, match="start_factor"):
        LinearLR(0.1, 3, start_factor=0.0)
    with pytest.raises(ValueError, match="end_factor"):
        LinearLR(0.1, 3, end_factor=1.5)
