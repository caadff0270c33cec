"""nn.AdaptiveLogSoftmaxWithLoss / F.adaptive_log_softmax_with_loss: output,
loss, log_prob and predict, and the gradients of input and every weight,
against PyTorch's module holding the same weights (Paddle's Linear weights
are PyTorch's transposed); a converted training step (numpy, xla) equals
eager; an out-of-range label fails."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static

RNG = np.random.default_rng(31)
X = RNG.standard_normal((6, 8))
Y = np.array([0, 4, 9, 2, 6, 5])


def _pair(head_bias):
    torch = pytest.importorskip("torch")
    d2s.seed(1)
    ours = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=head_bias)
    for p in ours.parameters():
        p.set_value(RNG.standard_normal(p.shape).astype(p.dtype))
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0,
                                                 head_bias=head_bias).double()
    with torch.no_grad():
        theirs.head.weight.copy_(torch.tensor(ours.head.weight.numpy().T))
        if head_bias:
            theirs.head.bias.copy_(torch.tensor(ours.head.bias.numpy()))
        for t, o in zip(theirs.tail, ours.tail):
            t[0].weight.copy_(torch.tensor(o[0].weight.numpy().T))
            t[1].weight.copy_(torch.tensor(o[1].weight.numpy().T))
    return torch, ours, theirs


@pytest.mark.parametrize("head_bias", [False, True])
def test_matches_torch(head_bias):
    torch, ours, theirs = _pair(head_bias)
    ours = ours.to(dtype="float64")
    xd = d2s.to_tensor(X, stop_gradient=False)
    xt = torch.tensor(X, requires_grad=True)
    out, loss = ours(xd, d2s.to_tensor(Y))
    res = theirs(xt, torch.tensor(Y))
    np.testing.assert_allclose(out.numpy(), res.output.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(loss.numpy(), res.loss.detach().numpy(), rtol=1e-10)
    loss.backward()
    res.loss.backward()
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.head.weight.grad.numpy(), theirs.head.weight.grad.numpy().T,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.tail[1][0].weight.grad.numpy(),
                               theirs.tail[1][0].weight.grad.numpy().T, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.log_prob(d2s.to_tensor(X)).numpy(),
                               theirs.log_prob(torch.tensor(X)).detach().numpy(), rtol=1e-10)
    np.testing.assert_array_equal(ours.predict(d2s.to_tensor(X)).numpy(),
                                  theirs.predict(torch.tensor(X)).numpy())
    fo, fl = F.adaptive_log_softmax_with_loss(
        d2s.to_tensor(X), d2s.to_tensor(Y), ours.head.weight,
        [(t[0].weight, t[1].weight) for t in ours.tail], [3, 6, 10], ours.head.bias)
    np.testing.assert_allclose(fo.numpy(), out.numpy(), rtol=1e-12)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_training_step_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    runs = []
    for convert in (False, True):
        d2s.seed(2)
        model = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], head_bias=True)
        opt = d2s.optimizer.SGD(0.1, parameters=model.parameters())

        def step(x, y):
            _, loss = model(x, y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        fn = to_static(step, backend=backend) if convert else step
        xs = d2s.to_tensor(X.astype(np.float32))
        runs.append([fn(xs, d2s.to_tensor(Y)).numpy() for _ in range(3)]
                    + [model.head.weight.numpy()])
    for a, c in zip(*runs):
        np.testing.assert_allclose(c, a, rtol=1e-5, atol=1e-6)


def test_bad_labels_and_cutoffs():
    model = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])
    with pytest.raises(AssertionError, match="label values"):
        model(d2s.to_tensor(X.astype(np.float32)), d2s.to_tensor(np.array([0, 1, 2, 3, 4, 10])))
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])
