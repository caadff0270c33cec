"""Training loops as notebooks write them, with the step converted: an EMA
of the weights updated with `set_value` under `no_grad` after each
optimizer step, gradient accumulation over micro-batches (a Python
counter decides when to step), `clip_grad_norm_`, a linear-warmup learning
rate stepped by the loop, validation with `model.eval()` inside the loop
and early stopping on the tensor metric, and a checkpoint saved and
restored mid-training (`state_dict` of the model and the optimizer). Each
scenario runs eagerly and converted from the same state: losses and final
weights agree on numpy and xla."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F

from harness import BACKENDS, close, t


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


RNG = np.random.RandomState(0)
DATA = [(RNG.randn(5, 4).astype("float32"), RNG.randint(0, 3, 5)) for _ in range(5)]


def model_and_step(opt_fn, convert, backend, extra=None):
    d2s.seed(0)
    model = MLP()
    opt = opt_fn(model)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        if extra is not None:
            extra(model)
        return loss

    return model, opt, (d2s.jit.to_static(step, backend=backend) if convert else step)


def ema_scenario(convert, backend):
    d2s.seed(1)
    ema = MLP()

    def update_ema(model, decay=0.9):
        with d2s.no_grad():
            for p_ema, p in zip(ema.parameters(), model.parameters()):
                p_ema.set_value(p_ema * decay + p * (1 - decay))

    model, _, step = model_and_step(
        lambda m: d2s.optimizer.Adam(0.05, parameters=m.parameters()), convert, backend,
        update_ema)
    losses = [step(t(x), t(y)).numpy() for x, y in DATA]
    return losses, [ema, model]


def accumulation_scenario(convert, backend, accum=2):
    d2s.seed(0)
    model = MLP()
    opt = d2s.optimizer.SGD(0.1, parameters=model.parameters())

    def micro_step(x, y, i):
        loss = F.cross_entropy(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:       # a Python counter: one program per phase
            opt.step()
            opt.clear_grad()
        return loss

    if convert:
        micro_step = d2s.jit.to_static(micro_step, backend=backend)
    losses = [micro_step(t(x), t(y), i).numpy() for i, (x, y) in enumerate(DATA)]
    return losses, [model]


def clipping_scenario(convert, backend):
    d2s.seed(0)
    model = MLP()
    opt = d2s.optimizer.SGD(0.5, parameters=model.parameters())

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 0.3)
        opt.step()
        opt.clear_grad()
        return loss, norm

    if convert:
        step = d2s.jit.to_static(step, backend=backend)
    out = [[v.numpy() for v in step(t(x), t(y))] for x, y in DATA]
    assert out[0][1] > 0.3
    return out, [model]


def warmup_scenario(convert, backend):
    sched = d2s.optimizer.lr.LinearWarmup(learning_rate=0.1, warmup_steps=3, start_lr=0.0,
                                          end_lr=0.1)
    model, _, step = model_and_step(
        lambda m: d2s.optimizer.Momentum(sched, momentum=0.9, parameters=m.parameters()),
        convert, backend)
    losses = []
    for x, y in DATA:
        losses.append(step(t(x), t(y)).numpy())
        sched.step()
    return losses, [model]


def validation_scenario(convert, backend):
    d2s.seed(0)
    model = MLP()
    opt = d2s.optimizer.Adam(0.05, parameters=model.parameters())
    forward = d2s.jit.to_static(model, backend=backend) if convert else model
    val_x, val_y = t(DATA[0][0]), t(DATA[0][1])
    out, best, bad = [], None, 0
    for x, y in DATA[1:]:
        model.train()
        loss = F.cross_entropy(forward(t(x)), t(y))
        loss.backward()
        opt.step()
        opt.clear_grad()
        model.eval()
        with d2s.no_grad():
            val = F.cross_entropy(forward(val_x), val_y)
        acc = (forward(val_x).argmax(-1) == val_y).astype("float32").mean()
        out += [loss.numpy(), val.numpy(), acc.numpy()]
        if best is None or val < best:
            best, bad = val, 0
        else:
            bad += 1
            if bad > 1:
                break
    return out, [model]


def checkpoint_scenario(convert, backend, tmp_path=None):
    model, opt, step = model_and_step(
        lambda m: d2s.optimizer.Adam(0.05, parameters=m.parameters()), convert, backend)
    losses = []
    for i, (x, y) in enumerate(DATA):
        losses.append(step(t(x), t(y)).numpy())
        if i == 2:
            d2s.save(model.state_dict(), str(tmp_path / f"m{convert}.pdparams"))
            d2s.save(opt.state_dict(), str(tmp_path / f"o{convert}.pdopt"))
            step(t(x), t(y))                           # a step taken back
            model.set_state_dict(d2s.load(str(tmp_path / f"m{convert}.pdparams")))
            opt.set_state_dict(d2s.load(str(tmp_path / f"o{convert}.pdopt")))
    return losses, [model]


SCENARIOS = {"ema": ema_scenario, "accumulation": accumulation_scenario,
             "clip_grad_norm": clipping_scenario, "warmup": warmup_scenario,
             "validation": validation_scenario, "checkpoint": checkpoint_scenario}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_training_loop_converted_like_eager(scenario, backend, tmp_path):
    run = SCENARIOS[scenario]
    kwargs = {"tmp_path": tmp_path} if scenario == "checkpoint" else {}
    expected, expected_models = run(False, backend, **kwargs)
    actual, models = run(True, backend, **kwargs)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        for j, (u, v) in enumerate(zip(np.atleast_1d(np.asarray(a, dtype=object)),
                                       np.atleast_1d(np.asarray(e, dtype=object)))):
            close(np.asarray(u, "float32"), np.asarray(v, "float32"), "xla", f"value {i}.{j}")
    for m, e in zip(models, expected_models):
        for (k, a), b in zip(m.state_dict().items(), e.state_dict().values()):
            close(a.numpy(), b.numpy(), "xla", k)
