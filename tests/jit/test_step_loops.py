"""Training steps as people write them (issue 10): GAN-style steps that freeze
one model while training the other, gradient accumulation, metrics. Each runs
the same loop eagerly and as programs from the same state and compares
parameters, `.grad` (None kept) and optimizer state bitwise on numpy, and the
number of programs each step builds."""
import contextlib

import numpy as np

import d2s
import d2s.nn as nn
from d2s import optimizer

from train_step_helpers import MLP, eager_mode, same

RNG = np.random.default_rng(7)
NOISE = [(RNG.normal(size=(8, 3)).astype("float32"), RNG.normal(size=(8, 6)).astype("float32"))
         for _ in range(4)]


def set_trainable(layer, flag):
    for p in layer.parameters():
        p.stop_gradient = not flag


def gan(static, steps):
    """A generator G and a critic D trained in turn; `steps(G, D, og, od)`
    gives the step functions, called in order on each batch. Returns the
    outputs, every parameter, gradient and optimizer state, and the steps."""
    d2s.seed(0)
    G, D = nn.Linear(3, 6), MLP()
    og = optimizer.Adam(0.01, parameters=G.parameters())
    od = optimizer.SGD(0.1, parameters=D.parameters())
    fns = [d2s.jit.to_static(f) for f in steps(G, D, og, od)]
    outs = []
    with contextlib.nullcontext() if static else eager_mode():
        for z, x in NOISE:
            z, x = d2s.to_tensor(z), d2s.to_tensor(x)
            for fn in fns:
                out = fn(z, x)
                outs.append([np.array(o.numpy(), copy=True) for o in out])
                outs.append([p.stop_gradient for p in D.parameters()])  # as each call left it
    params = G.parameters() + D.parameters()
    state = ([p.numpy().copy() for p in params]
             + [None if p.grad is None else p.grad.numpy().copy() for p in params]
             + [t.numpy().copy() for o in (og, od) for _, ts in o._state.values() for t in ts]
             + [[p.stop_gradient for p in params]])
    return outs, state, fns


def same_run(a, b):
    """Two `gan` results agree: arrays bitwise (numpy), flags exactly."""
    def split(xs):
        flags = [x for x in xs if isinstance(x, list) and x and isinstance(x[0], bool)]
        return [x for x in xs if not (isinstance(x, list) and x and isinstance(x[0], bool))], flags
    (oa, fa), (ob, fb) = split(a[0]), split(b[0])
    return same(oa, ob) and fa == fb and same(a[1][:-1], b[1][:-1]) and a[1][-1] == b[1][-1]


def variants(fn):
    """The programs `fn`'s one signature holds (one per eager gradient state)."""
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
    assert all(g is None for g in static[1][6:12])     # D's cleared, G's cleared


def test_steps_that_freeze_a_model_in_turn_build_once_each():
    eager = gan(False, two_steps_freezing_in_turn)
    static = gan(True, two_steps_freezing_in_turn)
    assert same_run(eager, static)
    d_step, g_step = static[2]
    # each call enters with D frozen by the other step: the state a step sets
    # itself before reading it is not a new state to trace for, call after call
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
    assert all(variants(step) <= 2 for step in static[2])
