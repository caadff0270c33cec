"""`optimizer.step()` and `clear_grad()` inside a tensor `if` of a converted
training step: the branch's parameter, optimizer-state and gradient writes
become the `cond`'s outputs, so each call updates exactly as the branch
eager code takes (gradient accumulation on a tensor counter, a step taken
only on a large loss). Eager vs to_static on the numpy and xla backends,
SGD and Adam (whose moments a first step inside the branch creates), over
calls that take both paths; a gradient cleared on the path taken is None
after the call, as eagerly.
The same carries other writes to eager Tensors made in a branch: batch-norm
running statistics, an in-place write to a buffer. A step in a tensor loop,
and backward in a branch, stay clear errors."""
import warnings

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s import optimizer
from d2s.static.backend import BackendFallbackWarning

RNG = np.random.default_rng(3)
XS = [RNG.standard_normal((2, 3)).astype("float32") for _ in range(5)]
THRESHOLDS = [0.5, 100.0, 0.5, 100.0, 0.0]   # steps on calls 0, 2, 4


def _make(kind):
    d2s.seed(0)
    net = nn.Linear(3, 2)
    opt = (optimizer.SGD(learning_rate=0.1, parameters=net.parameters()) if kind == "sgd"
           else optimizer.Adam(learning_rate=0.05, parameters=net.parameters()))
    return net, opt


def _step_on_large_loss(net, opt):
    def step(x, threshold):
        loss = (net(x) ** 2).sum()
        loss.backward()
        if loss > threshold:
            opt.step()
            opt.clear_grad()
        return loss
    return step


def _accumulate_then_step(net, opt):
    """A step every second call (a tensor counter); gradients add up between."""
    def step(x, count):
        loss = (net(x) - 1.0).abs().mean()
        loss.backward()
        if count % 2 == 1:
            opt.step()
            opt.clear_grad()
        else:
            loss = loss * 1.0
        return loss
    return step


def _run(kind, make_step, backend, extra):
    net, opt = _make(kind)
    fn = make_step(net, opt)
    if backend is not None:
        fn = d2s.jit.to_static(fn, backend=backend)
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        for x, e in zip(XS, extra):
            losses.append(float(fn(d2s.to_tensor(x), d2s.to_tensor(e)).numpy()))
    grads = [None if p.grad is None else p.grad.numpy() for p in net.parameters()]
    return losses, [p.numpy() for p in net.parameters()], grads


CASES = [("sgd", _step_on_large_loss, np.float32(THRESHOLDS)),
         ("adam", _step_on_large_loss, np.float32(THRESHOLDS)),
         ("sgd", _accumulate_then_step, np.arange(5, dtype="int64")),
         ("adam", _accumulate_then_step, np.arange(5, dtype="int64"))]


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("kind, make_step, extra", CASES,
                         ids=[f"{c[0]}-{c[1].__name__.strip('_')}" for c in CASES])
def test_step_in_a_tensor_if_updates_as_eagerly(kind, make_step, extra, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    want = _run(kind, make_step, None, extra)
    got = _run(kind, make_step, backend, extra)
    if backend == "numpy":   # the contract: bitwise what the eager run leaves
        assert got[0] == want[0]
        assert all(np.array_equal(g, w) for g, w in zip(got[1], want[1]))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert [g is None for g in got[2]] == [w is None for w in want[2]]
    for g, w in zip(got[2], want[2]):
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    # the paths differ: a run that never steps would leave other parameters
    assert not np.allclose(want[1][0], _make(kind)[0].weight.numpy())


def _nested(backend):
    d2s.seed(0)
    net = nn.Linear(3, 2)
    opt = optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=net.parameters())

    def step(x, a, b):
        loss = (net(x) ** 2).sum()
        loss.backward()
        if a > 0:
            if b > 0:
                opt.step()
            else:
                net.weight.clear_grad()
            opt.clear_grad()
        return loss
    fn = step if backend is None else d2s.jit.to_static(step, backend=backend)
    losses = []
    for x, (a, b) in zip(XS + XS[:1], [(1, 1), (1, -1), (-1, 1), (1, 1), (-1, -1), (1, 1)]):
        losses.append(float(fn(d2s.to_tensor(x), d2s.to_tensor(np.float32(a)),
                               d2s.to_tensor(np.float32(b))).numpy()))
    return losses, net.weight.numpy(), net.bias.numpy()


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_nested_tensor_ifs_with_a_step_and_clearings(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    want, got = _nested(None), _nested(backend)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _branch_writes(backend, train):
    d2s.seed(0)
    bn, lin = nn.BatchNorm1D(3), nn.Linear(3, 3)
    opt = optimizer.SGD(0.1, parameters=lin.parameters())
    buf = d2s.zeros([3])

    def f(x):
        h = lin(x)
        if x.sum() > 0:
            y = bn(h)
            buf.add_(1.0)
        else:
            y = h * 2.0
        if train:
            loss = y.sum() ** 2
            loss.backward()
            opt.step()
            opt.clear_grad()
        return y
    fn = f if backend is None else d2s.jit.to_static(f, backend=backend)
    outs = [fn(d2s.to_tensor(x + shift)).numpy() for x, shift in zip(XS, (1, -3, 1, 2))]
    return outs + [bn._mean.numpy(), bn._variance.numpy(), buf.numpy(), lin.weight.numpy()]


@pytest.mark.parametrize("train", [False, True], ids=["forward", "train"])
@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_batch_norm_statistics_and_buffer_writes_in_a_tensor_if(backend, train):
    if backend == "xla":
        pytest.importorskip("jax")
    want, got = _branch_writes(None, train), _branch_writes(backend, train)
    assert 0 < want[-2][0] < 4   # both paths taken over the four calls
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_step_in_a_tensor_loop_and_backward_in_a_branch_stay_errors():
    net, opt = _make("sgd")

    @d2s.jit.to_static
    def loop(x, n):
        loss = (net(x) ** 2).sum()
        loss.backward()
        i = d2s.zeros([], "int64")
        while i < n:
            opt.step()
            i = i + 1
        return loss

    with pytest.raises(RuntimeError, match=r"optimizer.step\(\) inside a tensor-dependent"):
        loop(d2s.to_tensor(XS[0]), d2s.to_tensor(np.int64(2)))

    @d2s.jit.to_static
    def branch(x):
        loss = (net(x) ** 2).sum()
        if loss > 0:
            loss.backward()
        return loss

    with pytest.raises(RuntimeError, match=r"backward\(\) inside a tensor-dependent"):
        branch(d2s.to_tensor(XS[0]))
