"""The whole training step as one program: backward, optimizer update and
gradient clearing inside `to_static` (DESIGN §9).

Every scenario runs the same step function eagerly and as a program from the
same state and compares values, gradients and optimizer state bitwise.
"""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s.jit import InputSpec, enable_to_static
from d2s.jit.train_step import StepProgram

from train_step_helpers import (RNN, RNN_SPEC, SEQUENCES, batch, both_modes, eager_mode, make,
                                outputs, run, same, snapshot, standard_step)


def op_types(sf, *args):
    program = sf.get_concrete_program(*args).main_program
    return [op.type for op in program.all_ops()]


# ---- exactly eager's effects, bitwise ---------------------------------------------------------
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_mlp_step_is_bitwise_eager_over_20_steps(kind):
    eager_losses, eager_state, _ = run(standard_step, kind=kind, static=False)
    losses, state, step = run(standard_step, kind=kind)
    assert same(losses, eager_losses)
    assert same(state, eager_state)
    assert losses[-1] < losses[0]                       # it trains
    types = op_types(step, *batch(0))
    update = "sgd_update" if kind == "sgd" else "adam_update"
    assert types.count(update) == 4                     # one update per parameter
    assert "cross_entropy_grad" in types                # the backward is in the program
    assert isinstance(step.get_concrete_program(*batch(0)), StepProgram)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_rnn_with_data_dependent_while_is_bitwise_eager(kind):
    eager_losses, eager_state, _ = run(standard_step, RNN, kind, static=False, data=SEQUENCES,
                                       spec=RNN_SPEC)
    losses, state, step = run(standard_step, RNN, kind, data=SEQUENCES, spec=RNN_SPEC)
    assert same(losses, eager_losses)
    assert same(state, eager_state)
    types = op_types(step, *batch(0, SEQUENCES))
    assert "while" in types and "while_grad" in types   # the loop really is one op
    assert len(step.program_cache) == 1                 # every length: one program


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_values_with_many_uses_sum_their_gradients_in_eagers_order(kind):
    """A value (and a weight) read by three or more ops: floating-point sums of
    their cotangents depend on the order, which the static backward takes from
    eager's tape walk (a reversed program order gives other bits here)."""
    def make_step(model, opt):
        def step(x, y):
            h = F.relu(model.fc1(x))
            out = model.fc2(h)
            w = model.fc2.weight
            loss = (F.cross_entropy(out, y) + (h * h).mean() * 0.1 + d2s.tanh(h).mean()
                    + (out * out).mean() * 0.01 + (w * w).sum() * 0.001
                    + d2s.abs(w).sum() * 0.001)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return step

    eager_losses, eager_state, _ = run(make_step, kind=kind, static=False)
    losses, state, _ = run(make_step, kind=kind)
    assert same(losses, eager_losses) and same(state, eager_state)


def test_python_values_keep_python_semantics():
    """A Python branch and Python loop in the step (gradient accumulation over
    micro-batches): traced as plain Python, same numbers as eager."""
    def make_step(model, opt):
        def step(x, y, micro):
            total = 0.0
            for k in range(micro):
                part = F.cross_entropy(model(x[k::micro]), y[k::micro]) / micro
                part.backward()
                total = total + part
            if micro > 1:
                opt.step()
            opt.clear_grad()
            return total
        return step

    (eager, static), step = both_modes(
        make_step, lambda step, *_: [outputs(step(*batch(i), 1 + i % 2)) for i in range(6)])
    assert same(eager, static)
    assert len(step.program_cache) == 2                 # one program per value of `micro`


# ---- gradients left as eager leaves them ---------------------------------------------------------
def test_gradients_accumulate_across_calls_when_not_cleared():
    """Without clear_grad, `.grad` accumulates call after call as eagerly; the
    step that sees existing gradients is a second program of the signature."""
    def make_step(model, opt):
        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss
        return step

    def drive(step, model, opt):
        for i in range(4):
            step(*batch(i))
            if i == 1:
                opt.step()

    (eager, static), step = both_modes(make_step, drive)
    assert same(eager, static)
    assert all(g is not None for g in static[1][1])
    program = step.get_concrete_program(*batch(0))
    assert len(program.variants) == 2                   # grads absent / present at entry


def test_backward_twice_accumulates_as_eager_and_backward_takes_a_grad():
    def make_step(model, opt):
        def step(x, y):
            out = model(x)
            loss = F.cross_entropy(out, y)
            loss.backward()
            loss.backward()                              # eager: accumulates again
            (out * 1.0).sum().backward(d2s.full([], 0.5))  # `grad` argument
            return loss
        return step

    (eager, static), _ = both_modes(make_step, lambda step, *_: outputs(step(*batch(0))))
    assert same(eager, static)


def test_param_clear_grad_and_set_to_zero():
    def make_step(model, opt):
        def step(x, y):
            F.cross_entropy(model(x), y).backward()
            model.fc1.weight.clear_grad()
            opt.clear_grad(set_to_zero=True)
            model.fc2.bias.clear_grad()
            return x.sum()
        return step

    (eager, static), _ = both_modes(make_step, lambda step, *_: outputs(step(*batch(0))))
    assert same(eager, static)
    grads = static[1][1]
    assert grads[0] is None and grads[3] is None        # cleared
    assert np.all(grads[1] == 0) and np.all(grads[2] == 0)  # set to zero


def test_step_with_no_gradients_is_a_no_op_as_eager():
    model, opt = make()
    before = snapshot(model, opt)
    step = d2s.jit.to_static(lambda x: (opt.step(), x * 2)[1])
    out = step(d2s.to_tensor([1.0]))
    assert np.array_equal(out.numpy(), [2.0])
    assert same(snapshot(model, opt), before)


def test_no_grad_block_detaches_as_eager():
    def make_step(model, opt):
        def step(x, y):
            with d2s.no_grad():
                weight = F.relu(model(x)).mean()       # no gradient through this
            loss = F.cross_entropy(model(x), y) * weight
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return step

    eager_losses, eager_state, _ = run(make_step, steps=5, static=False)
    losses, state, step = run(make_step, steps=5)
    assert same(losses, eager_losses) and same(state, eager_state)
    assert "detach" in op_types(step, *batch(0))


def test_clip_grad_norm_matches_the_torch_formula_and_eager():
    from d2s.nn.utils import clip_grad_norm_
    rng = np.random.default_rng(3)
    grads = [rng.normal(size=(3, 4)).astype("float32"), rng.normal(size=(4,)).astype("float32")]
    params = []
    for g in grads:
        p = d2s.to_tensor(np.zeros_like(g), stop_gradient=False)
        p.grad = d2s.to_tensor(g)
        params.append(p)
    total = clip_grad_norm_(params, max_norm=1.5)
    ref = np.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in grads))
    np.testing.assert_allclose(total.item(), ref, rtol=1e-6)
    scale = min(1.5 / (ref + 1e-6), 1.0)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * scale, rtol=1e-5)
    assert clip_grad_norm_(params, max_norm=100.0).item() == pytest.approx(1.5, rel=1e-5)

    def make_step(model, opt):
        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            norm = clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            opt.clear_grad()
            return loss, norm
        return step

    for kind in ("sgd", "adam"):
        (eager, static), _ = both_modes(
            make_step, lambda step, *_: [outputs(step(*batch(i))) for i in range(5)], kind=kind)
        assert same(eager, static)
        assert max(norm for _, norm in static[0]) > 0.5  # the clipping was active


# ---- mode switch mid-training -------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_switching_modes_mid_training_continues_identically(kind):
    _, reference, _ = run(standard_step, kind=kind, steps=20, static=False)
    model, opt = make(kind=kind)
    step = d2s.jit.to_static(standard_step(model, opt))
    for i in range(20):
        enable_to_static(i < 7 or i >= 14)              # static, eager, static again
        try:
            step(*batch(i))
        finally:
            enable_to_static(True)
    assert same(snapshot(model, opt), reference)


# ---- cache, printing, saving ----------------------------------------------------------------
def test_one_program_for_a_thousand_calls():
    model, opt = make()
    step = d2s.jit.to_static(standard_step(model, opt))
    x, y = batch(0)
    for _ in range(1000):
        step(x, y)
    assert len(step.program_cache) == 1
    assert step.program_cache.builds == 1
    assert len(step.get_concrete_program(x, y).variants) == 1


def test_the_step_program_prints_forward_backward_and_updates():
    model, opt = make()
    step = d2s.jit.to_static(standard_step(model, opt))
    text = str(step.get_concrete_program(*batch(0)).main_program)
    assert "cross_entropy(" in text and "cross_entropy_grad(" in text
    assert text.count("sgd_update(") == 4
    assert "learning_rate" in text


def test_jit_save_of_a_training_step_is_refused(tmp_path):
    model, opt = make()
    step = d2s.jit.to_static(standard_step(model, opt))
    before = snapshot(model, opt)
    with pytest.raises(TypeError, match="training step.*save the model"):
        d2s.jit.save(step, str(tmp_path / "step"),
                     input_spec=[InputSpec([16, 6]), InputSpec([16], "int64")])
    assert not (tmp_path / "step.json").exists()
    assert same(snapshot(model, opt), before)           # tracing it changed nothing
    d2s.jit.save(d2s.jit.to_static(model), str(tmp_path / "model"),
                 input_spec=[InputSpec([None, 6])])     # the model saves
    assert (tmp_path / "model.json").exists()


def test_set_lr_between_calls_reaches_the_program_without_a_new_one():
    def drive(step, model, opt):
        for i in range(6):
            opt.set_lr(0.1 / (1 + i))
            step(*batch(i))

    (eager, static), step = both_modes(standard_step, drive)
    assert same(eager, static)
    assert len(step.program_cache) == 1


def test_a_learning_rate_schedule_inside_the_step_is_a_write():
    def make_step(model, opt):
        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            opt.set_lr(opt.get_lr() * 0.9)             # decays on every call
            return loss
        return step

    (eager, static), step = both_modes(
        make_step, lambda step, *_: [outputs(step(*batch(i))) for i in range(5)], kind="adam")
    assert same(eager, static)
    assert static[1][3] == pytest.approx(0.01 * 0.9 ** 5)
    assert len(step.program_cache) == 1


def test_freezing_a_parameter_between_calls_is_seen():
    """Whether a parameter trains is part of what the program assumed: freezing
    one between calls gives the program for that state, as eager would."""
    def drive(step, model, opt):
        for i in range(6):
            model.fc1.weight.stop_gradient = i >= 3
            step(*batch(i))

    (eager, static), step = both_modes(standard_step, drive)
    assert same(eager, static)
    assert len(step.get_concrete_program(*batch(0)).variants) == 2


def test_a_replaced_layer_attribute_is_trained_as_eagerly():
    """A layer passed as an argument is read by attribute (CapturedTensors): a
    weight replaced between calls gets the program traced for it. The optimizer
    still holds the old weight, so the new one accumulates its gradient, and
    the old one is never updated again: eagerly the same."""
    def make_step(model, opt):
        def step(m, x, y):
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return step

    def drive(step, model, opt):
        losses = [outputs(step(model, *batch(0)))]
        old = model.fc1.weight
        model.fc1.weight = d2s.to_tensor(old.numpy() * 0.5, stop_gradient=False)
        losses += [outputs(step(model, *batch(i))) for i in range(1, 4)]
        return losses, model.fc1.weight.grad.numpy().copy(), old.numpy().copy()

    (eager, static), _ = both_modes(make_step, drive)
    assert same(eager, static)


# ---- bad input --------------------------------------------------------------------------------
def test_a_parameter_created_inside_the_step_is_a_clear_error():
    model, opt = make()

    @d2s.jit.to_static
    def step(x, y):
        extra = d2s.to_tensor(np.ones((4,), "float32"), stop_gradient=False)
        extra.name = "extra_bias"
        loss = F.cross_entropy(model(x) + extra, y)
        loss.backward()
        opt.step()
        return loss

    before = snapshot(model, opt)
    with pytest.raises(RuntimeError, match="'extra_bias' was created inside the traced step "
                       r"function \(at .*test_train_step.py, line \d+\)"):
        step(*batch(0))
    assert same(snapshot(model, opt), before)
    assert len(step.program_cache) == 0


def test_minimize_in_a_step_is_eagers_minimize():
    def make_step(model, opt):
        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.minimize(loss)                          # = step() after backward()
            opt.clear_grad()
            return loss
        return step

    for kind in ("sgd", "adam"):
        (eager, static), _ = both_modes(
            make_step, lambda step, *_: [outputs(step(*batch(i))) for i in range(4)], kind=kind)
        assert same(eager, static)

    model, opt = make()
    step = d2s.jit.to_static(lambda x, y: opt.minimize(F.cross_entropy(model(x), y)))
    with pytest.raises(RuntimeError, match="call loss.backward\\(\\) before minimize"):
        step(*batch(0))                                 # as eagerly


def test_a_layer_created_inside_the_step_is_a_clear_error():
    @d2s.jit.to_static
    def step(x, y):
        layer = d2s.nn.Linear(6, 4)
        loss = F.cross_entropy(layer(x), y)
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match=r"linear_\d+\.w_0' was created inside"):
        step(*batch(0))


def test_backward_of_a_value_that_needs_no_gradient_is_eagers_error():
    @d2s.jit.to_static
    def step(x):
        (x * 2).sum().backward()
        return x

    with eager_mode(), pytest.raises(RuntimeError, match="does not require grad") as eager:
        step(d2s.to_tensor([1.0]))
    with pytest.raises(RuntimeError, match="does not require grad") as static:
        step(d2s.to_tensor([1.0]))
    assert str(eager.value).splitlines()[0] in str(static.value)


def test_step_inside_a_tensor_branch_is_a_clear_error():
    model, opt = make()

    @d2s.jit.to_static
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        if loss > 0:
            loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="backward\\(\\) inside a tensor-dependent"):
        step(*batch(0))
    assert all(p.grad is None for p in model.parameters())


def test_grad_disabled_at_call_runs_eagerly():
    model, opt = make()
    step = d2s.jit.to_static(standard_step(model, opt))
    step(*batch(0))                                     # the program exists
    with d2s.no_grad(), pytest.raises(RuntimeError, match="does not require grad"):
        step(*batch(1))                                 # as eagerly: loss has no graph
