"""Random ops on the xla backend: each draw is made on the host by the numpy
kernel's own code, in program order, before the call, and fed to the
executable, so the numbers (and d2s's generator afterwards) equal the numpy
backend's. Before, any program with `dropout`, `rand` or `randn` ran on
numpy, with a `BackendFallbackWarning` ("draws from d2s's numpy random
generator").
"""
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.nn as nn  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s.jit import to_static  # noqa: E402
from d2s.static.backend import BackendFallbackWarning  # noqa: E402

from xla_helpers import assert_same, op_types  # noqa: E402


class _Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(8, 16)
        self.l2 = nn.Linear(16, 4)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        h = self.drop(F.relu(self.l1(x)))
        return self.l2(h) + d2s.rand([4]) * 0.01 + d2s.randn([x.shape[0], 4]) * 0.01


def _batch(n=2):
    return d2s.to_tensor(np.random.default_rng(1).normal(size=(n, 8)).astype(np.float32))


def _training(backend, steps=4):
    """Losses, forward outputs, the next draw after them, and the parameters."""
    d2s.seed(0)
    net = _Net()
    opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())

    def step(x, y):
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    step = to_static(step, backend=backend)
    x, y = _batch(), d2s.to_tensor(np.array([1, 3]))
    losses = [step(x, y).numpy() for _ in range(steps)]
    forward = to_static(net.forward, backend=backend)
    outs = [forward(x).numpy() for _ in range(2)]
    return losses + outs + [d2s.rand([3]).numpy()] + [p.numpy() for p in net.parameters()]


def test_a_training_step_with_dropout_and_noise_lowers_with_numpys_numbers(strict):
    assert_same(_training("xla"), _training("numpy"))


def test_the_step_really_draws_in_the_program():
    """The program holds the random ops; d2s's generator moved as on numpy."""
    d2s.seed(0)
    net = _Net()
    fn = to_static(net.forward, backend="xla")
    x = _batch()
    fn(x)
    assert {"dropout", "uniform", "gaussian"} <= op_types(fn.concrete_program.main_program)
    after_xla = d2s.rand([2]).numpy()
    d2s.seed(0)
    _Net()  # the same parameter draws
    net.forward(x)  # eager: the same draws, in the same order
    np.testing.assert_array_equal(d2s.rand([2]).numpy(), after_xla)


def test_gradients_through_dropout_equal_numpys(strict):
    results = {}
    for backend in ("numpy", "xla"):
        d2s.seed(0)
        net = _Net()
        x = _batch()
        out = to_static(net.forward, backend=backend)(x)
        (out * out).sum().backward()
        results[backend] = [out.numpy()] + [p.grad.numpy() for p in net.parameters()]
    for got, want in zip(results["xla"], results["numpy"]):
        # the same units dropped; the rest equal up to float32 rounding of sums
        # that cancel (relative to each array's scale)
        np.testing.assert_array_equal(got == 0, want == 0)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("batch", [2, 5])
def test_a_dynamic_batch_draws_the_shape_of_each_call(strict, batch):
    spec = [d2s.static.InputSpec([None, 8], "float32")]
    results = {}
    for backend in ("numpy", "xla"):
        d2s.seed(0)
        net = _Net()
        fn = to_static(net.forward, input_spec=spec, backend=backend)
        results[backend] = [fn(_batch(batch)).numpy(), fn(_batch(3)).numpy()]
    assert_same(results["xla"], results["numpy"])


def _checked(x, label):
    h = F.dropout(x, 0.5)
    return F.cross_entropy(h, label)


def test_a_call_numpy_repeats_draws_once():
    """Labels out of range: the xla run's check fails and numpy runs the call
    again, raising its error; the generator is where numpy alone leaves it."""
    x = d2s.to_tensor(np.ones((2, 3), np.float32))
    bad = d2s.to_tensor(np.array([0, 7]))
    after = {}
    for backend in ("numpy", "xla"):
        d2s.seed(0)
        with pytest.raises(ValueError, match="labels must lie in"):
            to_static(_checked, backend=backend)(x, bad)
        after[backend] = d2s.rand([3]).numpy()
    np.testing.assert_array_equal(after["xla"], after["numpy"])


def _drawn_in_loop(x, n):
    outs = []
    i = 0
    while i < n:
        outs.append(x + d2s.rand([3]) * 0.0 + i)
        i += 1
    return d2s.stack(outs).sum(0) + F.dropout(x, 0.5)


def test_a_draw_in_a_tensor_loop_falls_back_with_numpys_numbers():
    x = d2s.to_tensor(np.ones(3, np.float32))
    n = d2s.to_tensor(np.array(70))  # past the first capacity too
    results = {}
    for backend in ("numpy", "xla"):
        d2s.seed(0)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", BackendFallbackWarning)
            out = to_static(_drawn_in_loop, backend=backend)(x, n)
        results[backend] = [out.numpy(), d2s.rand([2]).numpy()]
        if backend == "xla":
            assert any("a random draw inside a tensor `if` or loop" in str(w.message)
                       for w in seen)
    assert_same(results["xla"], results["numpy"])


def _top_level_draw_and_growing_list(x, n):
    noise = d2s.randn([3])
    outs = []
    i = 0
    while i < n:
        outs.append(x * 0.5 + i)
        i += 1
    return d2s.stack(outs).sum(0) + noise


def test_a_run_repeated_with_more_room_reuses_its_draws(strict):
    """70 appends exceed the first capacity (64): the run is compiled with more
    room and repeated with the same drawn values (drawn once)."""
    x = d2s.to_tensor(np.ones(3, np.float32))
    results = {}
    for backend in ("numpy", "xla"):
        d2s.seed(0)
        out = to_static(_top_level_draw_and_growing_list, backend=backend)(
            x, d2s.to_tensor(np.array(70)))
        results[backend] = [out.numpy(), d2s.rand([2]).numpy()]
    assert_same(results["xla"], results["numpy"])
