"""The shortened per-call paths on xla (issue 29 item 4) decide and compute
what the general paths do: a cached forward's inline cache calling the
executable's C++ entry itself, and a training step's donating run as one
function (the error code waited for, the values written back once, Layer
flags read from the instance dict). Each is checked against a path that
does not take it on the same inputs: results, parameters, errors, guards."""
import pathlib
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.nn as nn  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s.jit import to_static  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "jit"))
from train_step_helpers import (MLP, batch, eager_mode, make, same,  # noqa: E402
                                snapshot, standard_step)
from xla_helpers import bitwise  # noqa: E402


@pytest.fixture(autouse=True)
def on_xla():
    saved = d2s.jit.get_backend()
    d2s.jit.set_backend("xla")
    yield
    d2s.jit.set_backend(saved)


def grow(x, limit):
    steps = d2s.zeros([], "int64")
    while x.sum() < limit:
        x = x * 1.5 + 0.25
        steps = steps + 1
    return x, steps


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        return F.relu(self.fc(x)) * 2.0


def _direct(sf):
    """Whether `sf`'s inline cache calls the executable's entry itself."""
    inline = sf._inline
    return inline is not None and "CALL" in inline.__code__.co_freevars


def _arrays(out):
    return [np.array(t.numpy()) for t in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.parametrize("case", ["no parameters, two results", "a Layer's parameters"])
def test_a_forward_through_the_inline_entry_equals_the_general_path(case):
    rng = np.random.default_rng(1)
    if case == "a Layer's parameters":
        d2s.seed(0)
        net = Net()
        sf, fn = to_static(net.forward), net.forward
        make_args = lambda: (d2s.to_tensor(rng.normal(size=(4, 6)).astype("float32")),)  # noqa: E731
    else:
        sf, fn = to_static(grow), grow
        make_args = lambda: (d2s.to_tensor(rng.uniform(0.5, 1, 8).astype("float32")), 40.0)  # noqa: E731
    with d2s.no_grad():
        args = make_args()
        for _ in range(3):
            sf(*args)
        assert _direct(sf)  # (the path under test is the one taken)
        for _ in range(3):
            args = make_args()  # a new host input each call: moved to the device as read
            fast = _arrays(sf(*args))
            assert _direct(sf)
            # the same program through the general path (keywords skip the inline cache)
            names = ("x", "limit")[:len(args)]
            general = _arrays(sf(**dict(zip(names, args))))
            assert bitwise(fast, general)
            with eager_mode():
                eager = _arrays(fn(*args))
            assert all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(fast, eager))


def test_a_parameter_rebound_between_inline_calls_is_read_anew():
    d2s.seed(0)
    net = Net()
    sf = to_static(net.forward)
    x = d2s.to_tensor(np.random.default_rng(2).normal(size=(4, 6)).astype("float32"))
    with d2s.no_grad():
        for _ in range(3):
            sf(x)
        assert _direct(sf)
        new_w = np.full((6, 3), 0.5, "float32")
        net.fc.weight.set_value(new_w)
        out = sf(x).numpy()
    expected = np.maximum(x.numpy() @ new_w + net.fc.bias.numpy(), 0) * 2.0
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_a_donating_step_refuses_a_bad_batch_as_numpy_does_and_keeps_the_parameters():
    """A label out of range on the step's fast path: numpy's error, nothing
    written back; the steps after it are those of a run that never saw it."""
    model, opt = make(MLP, "sgd")
    step = to_static(standard_step(model, opt))
    for i in range(3):  # (the fast path is made after the first xla run)
        step(*batch(i))
    assert step._inline is not None
    before = snapshot(model, opt)
    x, _ = batch(0)
    bad = d2s.to_tensor(np.full(16, 7, np.int64))
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 4\)"):
        step(x, bad)
    assert bitwise(snapshot(model, opt), before)
    losses = [float(step(*batch(i)).numpy()) for i in range(3, 5)]

    ref_model, ref_opt = make(MLP, "sgd")
    with eager_mode():
        ref_step = standard_step(ref_model, ref_opt)
        for i in range(3):
            ref_step(*batch(i))
        ref_losses = [float(ref_step(*batch(i)).numpy()) for i in range(3, 5)]
    assert same(losses, ref_losses)
    assert same(snapshot(model, opt), snapshot(ref_model, ref_opt))


class Moded(nn.Layer):
    """A forward whose Python reads a sublayer's `training` flag."""

    def __init__(self):
        super().__init__()
        self.body = MLP()

    def forward(self, x):
        out = self.body(x)
        return out * 3.0 if self.body.training else out


@pytest.mark.parametrize("switch", ["eval()", "flag set"])
def test_a_step_whose_trace_read_a_layer_flag_follows_the_flag(switch):
    """The step's guard reads the flags (from the instance dict on its fast
    path): a flag changed between steps runs the other branch, as eagerly."""
    def run(static):
        model, opt = make(Moded, "sgd")
        step = standard_step(model, opt)
        if static:
            step = to_static(step)
        losses = [float(step(*batch(i)).numpy()) for i in range(3)]
        if switch == "eval()":
            model.body.eval()
        else:
            model.body.training = False
        losses += [float(step(*batch(i)).numpy()) for i in range(3, 5)]
        model.body.train()
        losses += [float(step(*batch(i)).numpy()) for i in range(5, 7)]
        return losses, snapshot(model, opt)
    static_losses, static_state = run(True)
    with eager_mode():
        eager_losses, eager_state = run(False)
    assert same(static_losses, eager_losses)
    assert same(static_state, eager_state)
