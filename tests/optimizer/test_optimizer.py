"""SGD and Adam: eager step() vs numpy references; static minimize() trains
to the same losses as eager training; parameters are captured by reference."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import optimizer, static

rng = np.random.default_rng(0)
BATCHES = [(rng.normal(size=(16, 6)).astype("float32"), rng.integers(0, 4, 16))
           for _ in range(2)]
STEPS = 20


def make_mlp():
    d2s.seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))


def make_opt(kind, params):
    if kind == "sgd":
        return optimizer.SGD(learning_rate=0.1, parameters=params)
    return optimizer.Adam(learning_rate=0.01, parameters=params)


def train_eager(model, opt, steps=STEPS, start=0):
    losses = []
    for i in range(start, start + steps):
        x, y = BATCHES[i % len(BATCHES)]
        loss = F.cross_entropy(model(d2s.to_tensor(x)), d2s.to_tensor(y))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(loss.item())
    return losses


def build_train_program(model, opt):
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [None, 6])
        y = static.data("y", [None], "int64")
        loss = F.cross_entropy(model(x), y)
        opt.minimize(loss)
    return prog, loss


def train_static(prog, loss, steps=STEPS, start=0):
    exe = static.Executor()
    return [float(exe.run(prog, {"x": x, "y": y}, [loss])[0])
            for x, y in (BATCHES[i % len(BATCHES)] for i in range(start, start + steps))]


def rel_diff(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-12))


# ---- the headline check ---------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_static_minimize_matches_eager_training(kind):
    model = make_mlp()
    init = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    eager = train_eager(model, make_opt(kind, model.parameters()))
    eager_final = {k: v.numpy().copy() for k, v in model.state_dict().items()}

    model.set_state_dict(init)
    prog, loss = build_train_program(model, make_opt(kind, model.parameters()))
    static_losses = train_static(prog, loss)

    assert rel_diff(eager, static_losses) < 1e-5
    assert static_losses[-1] < 0.8 * static_losses[0]
    assert np.mean(eager[-2:]) < np.mean(eager[:2])
    for k, v in model.state_dict().items():  # updates landed on the eager parameters
        np.testing.assert_allclose(v.numpy(), eager_final[k], rtol=1e-5, atol=1e-6)


def test_minimize_appends_in_place_update_ops():
    model = make_mlp()
    opt = optimizer.Adam(parameters=model.parameters())
    prog, loss = build_train_program(model, opt)
    updates = [op for op in prog.global_block().ops if op.type == "adam_update"]
    assert len(updates) == 4
    captured_param_names = {p.name for p in model.parameters()}
    for op in updates:
        assert op.outputs[0] is op.inputs[0]          # param written in place
        assert op.outputs[1:] == op.inputs[2:5]       # m, v, step written in place
        assert op.inputs[5].name == "learning_rate"   # the rate: an input, read per run
        assert op.inputs[0].name in captured_param_names
    assert "adam_update(" in str(prog)


def test_mixed_static_then_eager_adam_continues_the_same_state():
    model = make_mlp()
    init = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    pure = train_eager(model, optimizer.Adam(0.01, parameters=model.parameters()))
    model.set_state_dict(init)
    opt = optimizer.Adam(0.01, parameters=model.parameters())
    prog, loss = build_train_program(model, opt)
    half = STEPS // 2
    mixed = train_static(prog, loss, half) + train_eager(model, opt, STEPS - half, start=half)
    assert rel_diff(pure, mixed) < 1e-5


def test_eager_update_between_static_runs_is_seen_without_rebuilding():
    model = make_mlp()
    x, y = BATCHES[0]
    prog = static.Program()
    with static.program_guard(prog):
        out = model(static.data("x", [None, 6]))
    exe = static.Executor()
    before, = exe.run(prog, {"x": x}, [out])
    opt = optimizer.SGD(0.5, parameters=model.parameters())
    loss = F.cross_entropy(model(d2s.to_tensor(x)), d2s.to_tensor(y))
    loss.backward()
    opt.step()
    after, = exe.run(prog, {"x": x}, [out])
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, model(d2s.to_tensor(x)).numpy(), rtol=1e-6)
    model.set_state_dict({k: np.zeros_like(v.numpy()) for k, v in model.state_dict().items()})
    zero, = exe.run(prog, {"x": x}, [out])
    np.testing.assert_array_equal(zero, 0)


# ---- eager steps vs numpy references ---------------------------------------------------
def test_sgd_step_matches_formula_and_skips_params_without_grad():
    w = d2s.to_tensor([1.0, 2.0], stop_gradient=False)
    unused = d2s.to_tensor([5.0], stop_gradient=False)
    opt = optimizer.SGD(learning_rate=0.1, parameters=[w, unused])
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.numpy(), [1.0 - 0.1 * 2.0, 2.0 - 0.1 * 4.0], rtol=1e-6)
    assert unused.numpy().tolist() == [5.0]
    opt.clear_grad()
    assert w.grad is None


def test_adam_steps_match_numpy_reference():
    w0 = np.array([0.5, -1.0, 2.0], dtype="float32")
    w = d2s.to_tensor(w0, stop_gradient=False)
    opt = optimizer.Adam(learning_rate=0.1, beta1=0.8, beta2=0.9, epsilon=1e-6, parameters=[w])
    ref, m, v = w0.astype(np.float64), 0.0, 0.0
    for t in range(1, 4):
        (w * w * w).sum().backward()
        opt.step()
        opt.clear_grad()
        g = 3 * ref ** 2
        m = 0.8 * m + 0.2 * g
        v = 0.9 * v + 0.1 * g * g
        ref = ref - 0.1 * (m / (1 - 0.8 ** t)) / (np.sqrt(v / (1 - 0.9 ** t)) + 1e-6)
    np.testing.assert_allclose(w.numpy(), ref, rtol=1e-5)
    assert w.dtype == np.float32


def test_minimize_in_dynamic_mode_needs_backward_first():
    model = make_mlp()
    opt = optimizer.SGD(0.1, parameters=model.parameters())
    x, y = (d2s.to_tensor(a) for a in BATCHES[0])
    loss = F.cross_entropy(model(x), y)
    with pytest.raises(RuntimeError, match="backward"):
        opt.minimize(loss)
    w = model[0].weight.numpy().copy()
    loss.backward()
    opt.minimize(loss)
    assert not np.allclose(model[0].weight.numpy(), w)


def test_static_minimize_defaults_to_captured_trainable_params():
    model = make_mlp()
    frozen = model[0].weight
    frozen.stop_gradient = True
    try:
        prog, loss = build_train_program(model, optimizer.SGD(0.1))
        updated = {op.inputs[0].name for op in prog.global_block().ops
                   if op.type == "sgd_update"}
        assert updated == {p.name for p in model.parameters()} - {frozen.name}
        w = frozen.numpy().copy()
        train_static(prog, loss, 2)
        np.testing.assert_array_equal(frozen.numpy(), w)
    finally:
        frozen.stop_gradient = False


def test_bad_arguments():
    with pytest.raises(TypeError, match="learning_rate"):
        optimizer.SGD(learning_rate="0.1")
    with pytest.raises(TypeError, match="parameters"):
        optimizer.SGD(0.1, parameters=[np.zeros(2)])
    with pytest.raises(ValueError, match="no parameters"):
        optimizer.Adam().step()
