"""A model built the way framework-savvy users write it: blocks in a
`LayerList`, per-block scales in a `ParameterList`, a step counter and an
exponential moving average of the features kept as buffers
(`register_buffer`) and updated in `forward`, custom initialisation through
`apply(init_fn)`; trained by a whole training step converted at once
(forward, backward, global-norm gradient clipping, AdamW with a warmup +
cosine LR schedule, `clear_grad`), with the scheduler stepped by the caller
after each step, or inside the converted step (then stepped on every run)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import optimizer
from d2s.optimizer import lr as sched
from d2s.static import InputSpec

from harness import BACKENDS, assert_no_variables_left, build, close, state, t
from xla_budget import for_backend

D = 6


def init_weights(layer):
    if isinstance(layer, nn.Linear):
        layer.weight.set_value(np.random.normal(0.0, 0.2, layer.weight.shape).astype("float32"))
        if layer.bias is not None:
            layer.bias.set_value(np.full(layer.bias.shape, 0.01, "float32"))
    elif isinstance(layer, nn.LayerNorm):
        layer.weight.set_value(np.ones(layer.weight.shape, "float32"))
        layer.bias.set_value(np.zeros(layer.bias.shape, "float32"))


class ResidualMLP(nn.Layer):
    def __init__(self, depth=3, momentum=0.9):
        super().__init__()
        self.blocks = nn.LayerList([nn.Sequential(nn.LayerNorm(D), nn.Linear(D, D), nn.GELU())
                                    for _ in range(depth)])
        self.scales = nn.ParameterList([
            self.create_parameter([1], default_initializer=nn.initializer.Constant(0.5))
            for _ in range(depth)])
        self.head = nn.Linear(D, 2)
        self.momentum = momentum
        self.register_buffer("num_updates", d2s.zeros([1], dtype="int64"))
        self.register_buffer("feature_ema", d2s.zeros([D]))
        self.apply(init_weights)

    def forward(self, x):
        for block, scale in zip(self.blocks, self.scales):
            x = x + scale * block(x)
        if self.training:
            self.num_updates = self.num_updates + 1
            m = self.momentum
            self.feature_ema = m * self.feature_ema + (1 - m) * x.mean(axis=0).detach()
        return self.head(x)


def make(static, backend, scheduler_inside):
    model = build(ResidualMLP)
    schedule = sched.LinearWarmup(sched.CosineAnnealingDecay(0.05, T_max=6), warmup_steps=2,
                                  start_lr=0.0, end_lr=0.05)
    opt = optimizer.AdamW(learning_rate=schedule, parameters=model.parameters(),
                          weight_decay=0.01, grad_clip=nn.ClipGradByGlobalNorm(0.5))

    def train_step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        if scheduler_inside:
            schedule.step()
        return loss

    if static:
        train_step = d2s.jit.to_static(train_step, backend=backend, input_spec=[
            InputSpec([None, D]), InputSpec([None], "int64")])
    return model, schedule, train_step


RNG = np.random.default_rng(20)
DATA = [(RNG.normal(size=(n, D)), RNG.integers(0, 2, n)) for n in (4, 6, 4, 4, 6, 4)]


def run(static, backend, scheduler_inside=False):
    model, schedule, step = make(static, backend, scheduler_inside)
    losses, lrs = [], []
    for x, y in for_backend(DATA, backend):
        losses.append(step(t(x), t(y)).numpy())
        if not scheduler_inside:
            schedule.step()
        lrs.append(schedule())
        if static:
            assert_no_variables_left(("model", model))
    return losses, lrs, state(model)


@pytest.mark.parametrize("backend", BACKENDS)
def test_converted_train_step_with_schedule_and_clipping(backend):
    e_losses, e_lrs, e_state = run(False, backend)
    s_losses, s_lrs, s_state = run(True, backend)
    assert s_lrs == e_lrs
    assert e_lrs[0] != e_lrs[2]
    for i, (a, b) in enumerate(zip(s_losses, e_losses)):
        close(a, b, backend, f"loss {i}")
    for k, v in e_state.items():
        close(s_state[k], v, backend, k)
    assert int(e_state["num_updates"][0]) == len(for_backend(DATA, backend))
    assert set(e_state) >= {"num_updates", "feature_ema", "scales.0", "blocks.2.1.weight"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_scheduler_stepped_inside_the_converted_step_steps_on_every_run(backend):
    """`schedule.step()` inside the converted step advances the schedule on
    every run of its program (not once, when traced): rates, losses and
    state follow the eager loop that steps it after each call."""
    e_losses, e_lrs, e_state = run(False, backend)
    s_losses, s_lrs, s_state = run(True, backend, scheduler_inside=True)
    assert s_lrs == e_lrs
    for i, (a, b) in enumerate(zip(s_losses, e_losses)):
        close(a, b, backend, f"loss {i}")
    for k, v in e_state.items():
        close(s_state[k], v, backend, k)


def test_eval_mode_leaves_buffers_alone():
    model = build(ResidualMLP)
    fwd = d2s.jit.to_static(model.forward, input_spec=[InputSpec([None, D])])
    fwd(t(DATA[0][0]))
    model.eval()
    before = state(model)
    fwd(t(DATA[1][0]))
    after = state(model)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)
    assert int(after["num_updates"][0]) == 1
