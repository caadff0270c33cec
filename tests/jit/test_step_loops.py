"""Training steps as people write them (issue 10): GAN-style steps that freeze
one model while training the other, learning-rate schedules, values returned
that the step writes, train()/eval() with dropout, gradients set by hand,
logging with .item(). Each runs the same loop eagerly and as programs from
the same state and compares parameters, `.grad` (None kept) and optimizer
state bitwise on numpy, and the number of programs each step builds."""
import contextlib

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import optimizer

from train_step_helpers import (MLP, batch, both_modes, eager_mode, make, outputs, same, snapshot,
                                standard_step)

RNG = np.random.default_rng(7)
NOISE = [(RNG.normal(size=(8, 3)).astype("float32"), RNG.normal(size=(8, 6)).astype("float32"))
         for _ in range(4)]


def set_trainable(layer, flag):
    for p in layer.parameters():
        p.stop_gradient = not flag


def gan(static, steps):
    """A generator G and a critic D trained in turn; `steps(G, D, og, od)`
    gives the step functions, called in order on each batch. Returns the
    outputs, D's trainability after each call, every parameter, gradient and
    optimizer state at the end, and the steps."""
    d2s.seed(0)
    G, D = nn.Linear(3, 6), MLP()
    og = optimizer.Adam(0.01, parameters=G.parameters())
    od = optimizer.SGD(0.1, parameters=D.parameters())
    fns = [d2s.jit.to_static(f) for f in steps(G, D, og, od)]
    outs, flags = [], []
    with contextlib.nullcontext() if static else eager_mode():
        for z, x in NOISE:
            z, x = d2s.to_tensor(z), d2s.to_tensor(x)
            for fn in fns:
                out = fn(z, x)
                outs.append([np.array(o.numpy(), copy=True) for o in out])
                flags.append([p.stop_gradient for p in D.parameters()])
    params = G.parameters() + D.parameters()
    state = ([p.numpy().copy() for p in params]
             + [None if p.grad is None else p.grad.numpy().copy() for p in params]
             + [t.numpy().copy() for o in (og, od) for _, ts in o._state.values() for t in ts])
    return outs, flags, state, fns


def same_run(a, b):
    """Two `gan` results agree: arrays bitwise (numpy), flags exactly."""
    return same(a[0], b[0]) and a[1] == b[1] and same(a[2], b[2])


def variants(fn):
    """The programs `fn`'s one signature holds (one per eager state it assumed)."""
    (concrete,) = fn.program_cache.concrete_programs()
    return len(concrete.variants)


def one_step_freezing_inside(G, D, og, od):
    """D trains on real and fake, then is frozen while G trains through it:
    eagerly the G loss's backward gives D no gradient."""
    def step(z, x):
        fake = G(z)
        set_trainable(D, True)
        d_loss = D(x).mean() - D(fake.detach()).mean()
        d_loss.backward()
        od.step()
        od.clear_grad()
        set_trainable(D, False)
        g_loss = -D(fake).mean()
        g_loss.backward()
        og.step()
        og.clear_grad()
        return d_loss, g_loss
    return [step]


def two_steps_freezing_in_turn(G, D, og, od):
    """The usual split: a D step and a G step, each setting D's trainability first."""
    def d_step(z, x):
        set_trainable(D, True)
        d_loss = D(x).mean() - D(G(z).detach()).mean()
        d_loss.backward()
        od.step()
        od.clear_grad()
        return (d_loss,)

    def g_step(z, x):
        set_trainable(D, False)
        g_loss = -D(G(z)).mean()
        g_loss.backward()
        og.step()
        og.clear_grad()
        return (g_loss,)
    return [d_step, g_step]


def test_a_model_frozen_inside_the_step_gets_no_gradient_as_eager():
    eager = gan(False, one_step_freezing_inside)
    static = gan(True, one_step_freezing_inside)
    assert same_run(eager, static)
    assert all(g is None for g in static[2][6:12])     # D's cleared, G's cleared


def test_steps_that_freeze_a_model_in_turn_keep_two_programs_each():
    """Each call enters with D's trainability as the other step left it: the
    first trace cannot see the flags it found (it set them), so the second
    call traces again, for the flags it finds, and commits the ones the step
    sets; every later call runs one of those two programs (it traced again on
    every call, and left D's flags unset after a run)."""
    eager = gan(False, two_steps_freezing_in_turn)
    static = gan(True, two_steps_freezing_in_turn)
    assert same_run(eager, static)
    d_step, g_step = static[3]
    assert variants(d_step) <= 2 and variants(g_step) <= 2


def two_steps_clearing_first(G, D, og, od):
    """Each step clears its optimizer's gradients first (they stay after the
    update), and freezes or unfreezes D after clearing: trainability is read
    when the backward runs, as eager's backward reads it."""
    def d_step(z, x):
        od.clear_grad()
        set_trainable(D, True)
        d_loss = D(x).mean() - D(G(z).detach()).mean()
        d_loss.backward()
        od.step()
        return (d_loss,)

    def g_step(z, x):
        og.clear_grad()
        set_trainable(D, False)
        g_loss = -D(G(z)).mean()
        g_loss.backward()
        og.step()
        return (g_loss,)
    return [d_step, g_step]


def test_steps_that_clear_first_leave_trainability_as_eager():
    eager = gan(False, two_steps_clearing_first)
    static = gan(True, two_steps_clearing_first)
    assert same_run(eager, static)
    assert all(variants(step) <= 2 for step in static[3])


# ---- learning-rate schedules --------------------------------------------------------------------
def test_a_schedule_stepped_in_its_own_function_changes_the_rate_on_every_call():
    """`set_lr` in a converted function with no backward or update (a
    scheduler's step, run once per epoch): eagerly the rate halves per call,
    so the program writes it on every run."""
    def rates(static):
        _, opt = make()
        decay = d2s.jit.to_static(lambda x: (opt.set_lr(opt.get_lr() * 0.5), x * 2)[1])
        with contextlib.nullcontext() if static else eager_mode():
            return [(decay(d2s.to_tensor([1.0])).numpy().tolist(), opt.get_lr())
                    for _ in range(3)], decay
    (eager, _), (static, decay) = rates(False), rates(True)
    assert static == eager and eager[-1][1] == 0.1 / 8
    assert len(decay.program_cache) == 1


def test_set_lr_under_a_tensor_condition_is_a_clear_error():
    """Eagerly the rate changes only when the condition holds (a plateau
    schedule); the program cannot write it on some calls only, so it refuses,
    pointing at `d2s.where`, and changes nothing."""
    model, opt = make()

    @d2s.jit.to_static
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        if loss > 100:
            opt.set_lr(opt.get_lr() * 0.5)
        return loss

    before = snapshot(model, opt)
    with pytest.raises(RuntimeError, match=r"optimizer.set_lr\(\) inside a tensor-dependent"
                       r"(.|\n)*opt.set_lr\(opt.get_lr\(\) \* d2s.where\(cond, 0.5, 1.0\)\)"):
        step(*batch(0))
    assert same(snapshot(model, opt), before)


def test_set_lr_with_a_tensor_rate_is_eagers():
    """What the error suggests: a rate chosen by `d2s.where` (eager accepts a
    0-d Tensor too)."""
    def make_step(model, opt):
        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            # (the rate is a Python float eagerly: times a float32 tensor, a
            # float32 tensor; in the program too, not float64)
            opt.set_lr(opt.get_lr() * d2s.where(loss > 1.6, 0.5, 1.0))
            return loss
        return step

    (eager, static), step = both_modes(
        make_step, lambda step, *_: [outputs(step(*batch(i))) for i in range(4)], kind="adam")
    assert same(eager, static)
    assert static[1][3] == float(np.float32(0.01) / 4)  # halved on two calls of four
    assert len(step.program_cache) == 1


# ---- outputs ----------------------------------------------------------------------------------
def test_returning_written_values_the_new_weight_and_rate():
    """A step that returns what it writes (a parameter after its update, the
    new rate): values of that call, as eagerly (on xla the write-back is the
    output; it failed to build before)."""
    def make_step(model, opt):
        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.set_lr(opt.get_lr() * 0.5)
            opt.step()
            opt.clear_grad()
            return {"loss": loss, "w": model.fc1.weight, "lr": opt.get_lr()}
        return step

    def drive(step, *_):
        # (the rate: a float eagerly, a 0-d float64 Tensor from the program)
        return [{k: float(v) if k == "lr" else outputs(v) for k, v in step(*batch(i)).items()}
                for i in range(3)]

    (eager, static), step = both_modes(make_step, drive, kind="adam")
    assert [sorted(d) for d in static[0]] == [["loss", "lr", "w"]] * 3
    assert same([list(d.values()) for d in static[0]], [list(d.values()) for d in eager[0]])
    assert same(static[1], eager[1])
    assert static[0][2]["lr"] == 0.01 / 8


# ---- train() / eval() between calls -------------------------------------------------------------
class DropoutMLP(MLP):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x))))


def test_eval_and_train_between_calls_switch_dropout_as_eager():
    """The step closes over the model: its `training` flag is no argument, yet
    dropout depends on it. The flags the trace read are part of what the
    program assumed, so `eval()` / `train()` between calls get the program
    for that mode (two in all), as eager code reads the flag on every call."""
    def drive(step, model, opt):
        losses = []
        for i in range(6):
            model.train() if i % 3 == 0 else model.eval()
            d2s.seed(100 + i)                           # dropout's draws, the same per call
            losses.append(outputs(step(*batch(i))))
        return losses

    (eager, static), step = both_modes(standard_step, drive, DropoutMLP, "adam")
    assert same(eager, static)
    assert variants(step) == 2


def test_set_lr_takes_any_one_element_tensor_as_eager():
    """Eager `set_lr` takes `float(value)`: a warm-up computed from a float32
    step counter, an int64 tensor, a one-element vector. In the program the
    same value becomes the float64 rate (it was refused: not float64[])."""
    def make_step(model, opt):
        def step(x, y, t):
            opt.set_lr(0.1 * d2s.minimum(t / 4.0, d2s.to_tensor(1.0)))  # float32 [1]
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            rate = opt.get_lr()
            opt.set_lr(d2s.full([], 3, "int64"))
            opt.set_lr(rate)
            return loss
        return step

    def drive(step, *_):
        return [outputs(step(*batch(i), d2s.to_tensor([i + 1.0]))) for i in range(3)]

    (eager, static), _ = both_modes(make_step, drive, kind="adam")
    assert same(eager, static)
    assert static[1][3] == float(np.float32(0.1) * np.float32(0.75))

    _, opt = make()
    bad = d2s.jit.to_static(lambda x: (opt.set_lr(x), x)[1])
    with eager_mode(), pytest.raises(ValueError) as eager_error:
        bad(d2s.ones([3]))
    with pytest.raises(ValueError) as static_error:
        bad(d2s.ones([3]))
    assert str(eager_error.value) in str(static_error.value)
    assert opt.get_lr() == 0.1


# ---- gradients set by hand ------------------------------------------------------------------------
def test_gradients_assigned_by_hand_are_writes_of_the_step():
    """`p.grad = None` (PyTorch's zero_grad(set_to_none)) or `p.grad = zeros`
    before the backward: writes of the step like clear_grad(). Before, an
    assignment made before the first backward acted on the eager Tensor once,
    at trace time: the first gave a new program on every call, the second a
    TypeError (a Variable left in `.grad`)."""
    def make_step(value):
        def make(model, opt):
            def step(x, y):
                for p in model.parameters():
                    p.grad = None if value is None else d2s.full(p.shape, value)
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                return loss
            return step
        return make

    for value in (None, 0.0, 0.5):
        (eager, static), step = both_modes(
            make_step(value), lambda step, *_: [outputs(step(*batch(i))) for i in range(4)])
        assert same(eager, static), value
        assert variants(step) <= 2, value               # gradients absent, then present


def test_item_inside_a_step_is_the_loss_of_each_run():
    """`.item()` for logging inside the step: eagerly a float; in the traced
    step it stands for that number (a weak 0-d value, as PaddlePaddle's
    converter makes it; tests/corpus/test_paddle_numpy_and_item.py), so each
    run returns its loss and trains as eagerly."""
    def make_step(model, opt):
        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss.item()
        return step

    (eager, static), step = both_modes(
        make_step, lambda step, *_: [float(step(*batch(i))) for i in range(3)])
    assert same(eager, static)
