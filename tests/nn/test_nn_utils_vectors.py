"""nn.utils.parameters_to_vector / vector_to_parameters / clip_grad_value_:
the same results as PyTorch's functions; the vector carries gradients to
the parameters; a converted training step that clips values (numpy, xla)
equals eager."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s import optimizer
from d2s.jit import to_static
from d2s.nn.utils import clip_grad_value_, parameters_to_vector, vector_to_parameters

RNG = np.random.default_rng(7)


def test_vectors_match_torch_and_carry_gradients():
    torch = pytest.importorskip("torch")
    arrays = [RNG.standard_normal((2, 3)), RNG.standard_normal(4)]
    ps = [d2s.to_tensor(a, stop_gradient=False) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    v = parameters_to_vector(ps)
    np.testing.assert_array_equal(v.numpy(), torch.nn.utils.parameters_to_vector(ts)
                                  .detach().numpy())
    w = RNG.standard_normal(10)
    (v * d2s.to_tensor(w)).sum().backward()
    np.testing.assert_array_equal(ps[0].grad.numpy(), w[:6].reshape(2, 3))
    np.testing.assert_array_equal(ps[1].grad.numpy(), w[6:])
    new = RNG.standard_normal(10)
    vector_to_parameters(d2s.to_tensor(new), ps)
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(torch.tensor(new), ts)
    for p, t in zip(ps, ts):
        np.testing.assert_array_equal(p.numpy(), t.detach().numpy())
        assert not p.stop_gradient
    with pytest.raises(ValueError, match="11 elements"):
        vector_to_parameters(d2s.to_tensor(np.zeros(11)), ps)


def test_clip_grad_value_matches_torch():
    torch = pytest.importorskip("torch")
    g = RNG.standard_normal((3, 4)) * 2
    p = d2s.to_tensor(np.zeros((3, 4)), stop_gradient=False)
    q = d2s.to_tensor(np.zeros(2), stop_gradient=False)  # no gradient: skipped
    (p * d2s.to_tensor(g)).sum().backward()
    clip_grad_value_([p, q], 0.7)
    t = torch.zeros((3, 4), requires_grad=True, dtype=torch.float64)
    (t * torch.tensor(g)).sum().backward()
    torch.nn.utils.clip_grad_value_([t], 0.7)
    np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())
    assert q.grad is None


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_step_with_clipping_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    xs = [RNG.standard_normal((4, 3)).astype(np.float32) for _ in range(3)]
    runs = []
    for convert in (False, True):
        d2s.seed(0)
        model = nn.Linear(3, 2)
        opt = optimizer.SGD(0.5, parameters=model.parameters())

        def step(x):
            loss = (model(x) ** 2).sum()
            loss.backward()
            clip_grad_value_(model.parameters(), 0.1)
            opt.step()
            opt.clear_grad()
            return loss
        fn = to_static(step, backend=backend) if convert else step
        runs.append([fn(d2s.to_tensor(x)).numpy() for x in xs]
                    + [parameters_to_vector(model.parameters()).numpy()])
    for a, c in zip(*runs):
        np.testing.assert_allclose(c, a, rtol=1e-6, atol=1e-7)
