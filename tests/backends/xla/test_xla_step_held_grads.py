"""A gradient held in another dtype than its parameter (left by eager code:
a float32 parameter whose `.grad` is float64) reaching a training step that
accumulates onto it. Eager adds the new gradient, cast to the parameter's
dtype, to the held one: the `.grad` stays float64 and the optimizer reads
it. The step does the same on both backends (it used to cast the sum to
float32, and xla raised LoweringError for a program traced with a float32
gradient): numpy bitwise, xla within its tolerance, the same dtypes
everywhere; a program is traced per held dtype (the guard)."""
import contextlib

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s.jit import to_static  # noqa: E402

import sys, pathlib  # noqa: E402,E401
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "jit"))
from train_step_helpers import accumulating_step, batch, eager_mode, make, snapshot  # noqa: E402
from xla_helpers import backend  # noqa: E402


def _widen_held_grads(model):
    """What an eager op in float64 leaves: every held gradient as float64."""
    for p in model.parameters():
        value = np.ones(p.shape) if p.grad is None else p.grad.numpy()
        p.grad = d2s.to_tensor(value.astype("float64"))


def _drive(step, model, static, steps_before):
    """`steps_before` calls, the held gradients widened, three more calls:
    (losses, dtypes of the gradients held at the end)."""
    ctx = contextlib.nullcontext() if static else eager_mode()
    with ctx:
        losses = [step(*batch(i)).numpy() for i in range(steps_before)]
        _widen_held_grads(model)
        losses += [step(*batch(i)).numpy() for i in range(3)]
    return losses, [p.grad.dtype for p in model.parameters()]


def close(a, b, exact):
    """Equal dtypes and values: bitwise (`exact`), else to rtol 1e-5 of each
    array's scale (values computed in float32, even where held as float64)."""
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, exact) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float):
        return a == b
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype:
        return False
    if exact or a.dtype.kind != "f":
        return np.array_equal(a, b)
    scale = float(np.abs(b).max()) if b.size else 0.0
    return np.allclose(a, b, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("steps_before", [0, 2], ids=["held-at-first-trace", "held-later"])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("name", ["numpy", "xla"])
def test_a_step_accumulates_onto_a_gradient_of_another_dtype_as_eager(name, kind, steps_before):
    model, opt = make(kind=kind)
    with eager_mode():
        want, want_dtypes = _drive(accumulating_step(model, opt), model, False, steps_before)
    eager_state = snapshot(model, opt)
    assert want_dtypes == [np.dtype("float64")] * len(want_dtypes)  # what eager leaves
    with backend(name):
        model, opt = make(kind=kind)
        step = to_static(accumulating_step(model, opt))
        got, dtypes = _drive(step, model, True, steps_before)
        assert dtypes == want_dtypes
        assert close(got, want, exact=name == "numpy")
        assert close(snapshot(model, opt), eager_state, exact=name == "numpy")
        # one program per held state: float64 only, or none, float32, float64
        variants = step.get_concrete_program(*batch(0)).variants
        assert len(variants) == (1 if steps_before == 0 else 3)


@pytest.mark.parametrize("name", ["numpy", "xla"])
def test_a_held_gradient_back_in_its_parameters_dtype_reuses_its_program(name):
    with backend(name):
        model, opt = make(kind="sgd")
        step = to_static(accumulating_step(model, opt))
        step(*batch(0))
        step(*batch(1))          # traced with float32 gradients held
        _widen_held_grads(model)
        step(*batch(2))          # float64: another program
        variants = step.get_concrete_program(*batch(0)).variants
        for p in model.parameters():
            p.grad = d2s.to_tensor(p.grad.numpy().astype("float32"))
        step(*batch(0))
        assert step.get_concrete_program(*batch(0)).variants == variants
        assert all(p.grad.dtype == np.float32 for p in model.parameters())
