"""`d2s.static.save_inference_model` / `load_inference_model` (Paddle's
deployment pair for static-mode programs): the saved program is pruned to
what the fetch targets need, carries its weights, and the loaded one gives
the original's numbers on every executor."""
import json

import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import nn, optimizer, static
from d2s.jit.serialization import ProgramFormatError


@pytest.fixture
def static_mode():
    d2s.enable_static()
    yield
    d2s.disable_static()


def _training_program():
    d2s.seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [None, 4])
        y = static.data("y", [None], "int64")
        logits = model(x)
        probs = F.softmax(logits)
        loss = F.cross_entropy(logits, y)
        optimizer.SGD(learning_rate=0.1, parameters=model.parameters()).minimize(loss)
    return prog, x, probs, loss, model


def test_a_saved_training_program_loads_as_its_forward_part(tmp_path, static_mode):
    prog, x, probs, loss, model = _training_program()
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((5, 4)).astype("float32"), rng.integers(0, 3, 5)
    exe = static.Executor()
    for _ in range(2):  # training steps: the weights move
        exe.run(prog, feed={"x": xs, "y": ys}, fetch_list=[loss])
    w0, b0, w1, b1 = (p.numpy() for p in model.parameters())
    logits = np.maximum(xs @ w0 + b0, 0.0) @ w1 + b1
    want = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    static.save_inference_model(str(tmp_path / "model"), [x], [probs], exe, program=prog)
    program, feed_names, fetch_targets = static.load_inference_model(str(tmp_path / "model"),
                                                                     exe)
    assert feed_names == ["x"] and len(fetch_targets) == 1
    types = {op.type for op in program.all_ops()}
    assert not any(t.endswith("_grad") or t in ("sgd", "cross_entropy") for t in types), types
    got = static.Executor().run(program, feed={"x": xs}, fetch_list=fetch_targets)[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    saved = json.loads((tmp_path / "model.json").read_text())
    assert len(saved["params"]) == 4  # the two Linear layers' weights and biases, no more


def test_control_flow_is_saved_with_its_blocks(tmp_path, static_mode):
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [3])
        out = static.nn.cond(x.sum() > 0, lambda: x * 2.0, lambda: x - 1.0)
    static.save_inference_model(str(tmp_path / "cond"), x, out, program=prog)
    program, _, fetch = static.load_inference_model(str(tmp_path / "cond"))
    assert "cond" in {op.type for op in program.all_ops()}
    for xs in (np.array([1.0, 2.0, 3.0], "float32"), np.array([-1.0, -2.0, 0.5], "float32")):
        got = static.Executor().run(program, feed={"x": xs}, fetch_list=fetch)[0]
        np.testing.assert_allclose(got, xs * 2.0 if xs.sum() > 0 else xs - 1.0)


def test_a_fetch_that_needs_another_input_is_refused_when_loaded(tmp_path, static_mode):
    prog, x, probs, loss, model = _training_program()
    static.save_inference_model(str(tmp_path / "bad"), [x], [loss], program=prog)
    with pytest.raises(ProgramFormatError, match=r"y"):
        static.load_inference_model(str(tmp_path / "bad"))


def test_bad_arguments_are_clear_errors(tmp_path, static_mode):
    prog, x, probs, loss, model = _training_program()
    with pytest.raises(TypeError, match=r"fetch_vars must be a static Variable"):
        static.save_inference_model(str(tmp_path / "m"), [x], ["probs"], program=prog)
    with pytest.raises(ValueError, match=r"feed '.*' is not a data variable"):
        static.save_inference_model(str(tmp_path / "m"), [probs], [loss], program=prog)
