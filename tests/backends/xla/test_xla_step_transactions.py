"""A training step that raises changes nothing, on xla as on numpy (issue 10
item 3, issue 9 item 6): every parameter, `.grad` and optimizer state (Adam
moments, step count) stays bitwise as before, no donated buffer is lost,
and the error is the numpy backend's (type and message). Failures covered:
an output no path assigned (a loop that ran zero times), a run-time
`assert` / `raise`, `check_finite`, bad input against an InputSpec; each on
a step whose buffers are donated where it may donate, and with the user
holding every parameter's array (then nothing is donated)."""
import contextlib

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s.jit import InputSpec, to_static  # noqa: E402

import sys, pathlib  # noqa: E402,E401
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "jit"))
from train_step_helpers import batch, eager_mode, make, same, snapshot  # noqa: E402
from xla_helpers import backend, bitwise, state_tensors  # noqa: E402


def _executables(step, *args):
    return [e for variant in step.get_concrete_program(*args).variants
            for r in variant._runners.values() for e in r._part.xla._executables.values()]


# ---- the steps --------------------------------------------------------------------------------
def _output_of_a_loop(model, opt):
    """Returns a name only a loop assigns: undefined when the loop runs zero
    times, which only the run knows (after the updates)."""
    def step(x, y, limit):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        i = d2s.zeros([], "int64")
        while loss < limit and i < 1:
            out = loss * 1.0
            i = i + 1
        return out
    return step


def _assert_after_update(model, opt):
    def step(x, y, limit):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        assert loss < limit, "loss diverged"
        return loss
    return step


def _raise_after_update(model, opt):
    def step(x, y, limit):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if loss > limit:
            raise ValueError("loss diverged")
        opt.clear_grad()
        return loss
    return step


def _accumulating_check(model, opt):
    """Keeps its gradients between calls (read as inputs, written as outputs)."""
    def step(x, y, limit):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        assert loss < limit, "loss diverged"
        return loss
    return step


FAILING = [
    (_output_of_a_loop, NameError, "name 'out' is not defined: no path that ran assigned it"),
    (_assert_after_update, AssertionError, "loss diverged"),
    (_raise_after_update, ValueError, "loss diverged"),
    (_accumulating_check, AssertionError, "loss diverged"),
]


def _failed_call(make_step, kind, held):
    """(error, snapshot before, snapshot after, arrays the user held, held copies,
    model, opt, step) of: two passing calls, then one that fails."""
    model, opt = make(kind=kind)
    step = to_static(make_step(model, opt))
    x, y = batch(0)
    step(x, y, d2s.to_tensor(100.0))
    step(*batch(1), d2s.to_tensor(100.0))
    arrays = [t.numpy() for t in state_tensors(model, opt)] if held else []
    copies = [a.copy() for a in arrays]
    before = snapshot(model, opt)
    with pytest.raises(Exception) as failure:
        step(x, y, d2s.to_tensor(0.0))
    return failure.value, before, snapshot(model, opt), arrays, copies, model, opt, step


@pytest.mark.parametrize("held", [False, True], ids=["ours", "held"])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("make_step, error, message", FAILING,
                         ids=[f[0].__name__.strip("_") for f in FAILING])
def test_a_failing_step_changes_nothing_on_xla_as_on_numpy(make_step, error, message, kind,
                                                           held):
    results = {}
    for name in ("numpy", "xla"):
        with backend(name):
            results[name] = _failed_call(make_step, kind, held)
    for name, (e, before, after, arrays, copies, model, opt, step) in results.items():
        assert type(e) is error and message in str(e), (name, e)
        assert bitwise(after, before), name
        assert all(t._value is not None for t in state_tensors(model, opt)), name
        assert all(np.array_equal(a, c) for a, c in zip(arrays, copies)), name
    assert str(results["xla"][0]) == str(results["numpy"][0])
    with backend("xla"):
        *_, model, opt, step = results["xla"]
        exes = _executables(step, *batch(0), d2s.to_tensor(0.0))
        assert exes  # (one per variant: the accumulating step has two)
        if make_step is _output_of_a_loop:
            # no error code says so: such a step donates nothing
            assert all(exe.donates == () for exe in exes)
        else:
            # an error code does: the failed run returned the old values in
            # the donated buffers (the check above: bitwise the old state)
            assert all(exe.donates and exe.checked for exe in exes)
        # and training goes on from there as on numpy
        step(*batch(2), d2s.to_tensor(100.0))
    with backend("numpy"):
        *_, np_model, np_opt, np_step = results["numpy"]
        np_step(*batch(2), d2s.to_tensor(100.0))
    with backend("xla"):  # (`same`: xla's tolerance while the backend is xla)
        assert same(snapshot(model, opt), snapshot(np_model, np_opt))


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_an_undefined_output_on_xla_equals_eager_on_the_calls_that_return(kind):
    """Eager mode raises UnboundLocalError after its updates (it is not
    transactional); the step raises before them: the state after the next
    call is eager's without the failed call."""
    with backend("xla"):
        model, opt = make(kind=kind)
        step = to_static(_output_of_a_loop(model, opt))
        losses = [float(step(*batch(i), d2s.to_tensor(100.0)).numpy()) for i in range(2)]
        with pytest.raises(NameError):
            step(*batch(2), d2s.to_tensor(0.0))
        losses.append(float(step(*batch(2), d2s.to_tensor(100.0)).numpy()))
        eager_model, eager_opt = make(kind=kind)
        eager_step = _output_of_a_loop(eager_model, eager_opt)
        with eager_mode():
            want = [float(eager_step(*batch(i), d2s.to_tensor(100.0)).numpy())
                    for i in range(3)]
        assert np.allclose(losses, want, rtol=1e-5)
        assert same(snapshot(model, opt), snapshot(eager_model, eager_opt))


def _standard(model, opt):
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    return step


@pytest.mark.parametrize("held", [False, True], ids=["donating", "held"])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_check_finite_on_xla_refuses_a_nan_step_bitwise(kind, held):
    reference = {}
    for name in ("numpy", "xla"):
        with backend(name):
            model, opt = make(kind=kind)
            step = to_static(_standard(model, opt), check_finite=True)
            step(*batch(0))
            step(*batch(1))
            arrays = [t.numpy() for t in state_tensors(model, opt)] if held else []
            copies = [a.copy() for a in arrays]
            before = snapshot(model, opt)
            x, y = batch(2)
            bad = x.numpy().copy()
            bad[0, 0] = np.nan
            with pytest.raises(FloatingPointError) as e:
                step(d2s.to_tensor(bad), y)
            assert bitwise(snapshot(model, opt), before)
            assert all(np.array_equal(a, c) for a, c in zip(arrays, copies))
            reference[name] = str(e.value)
            step(x, y)  # a finite step goes through
            assert not bitwise(snapshot(model, opt), before)
    assert reference["xla"] == reference["numpy"]


@pytest.mark.parametrize("held", [False, True], ids=["donating", "held"])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_bad_input_against_an_input_spec_changes_nothing_on_a_donating_step(kind, held):
    errors = {}
    for name in ("numpy", "xla"):
        with backend(name):
            model, opt = make(kind=kind)
            step = to_static(_standard(model, opt),
                             input_spec=[InputSpec([None, 6]), InputSpec([None], "int64")])
            step(*batch(0))
            step(*batch(1))
            if name == "xla":
                [exe] = _executables(step, *batch(0))
                assert exe.donates  # this step donates its buffers
            arrays = [t.numpy() for t in state_tensors(model, opt)] if held else []
            before = snapshot(model, opt)
            x, y = batch(2)
            bad = [(d2s.to_tensor(x.numpy().astype("float64")), y),
                   (d2s.to_tensor(np.ones((3, 5), "float32")), y),
                   (x, d2s.to_tensor(y.numpy().astype("float32")))]
            for args in bad:
                with pytest.raises(ValueError) as e:
                    step(*args)
                errors.setdefault(name, []).append(str(e.value))
            assert bitwise(snapshot(model, opt), before)
            assert all(t._value is not None for t in state_tensors(model, opt))
            del arrays
    assert errors["xla"] == errors["numpy"]


def _labels_out_of_range(y, label):
    labels = y.numpy().copy()
    labels[3] = label
    return d2s.to_tensor(labels)


@pytest.mark.parametrize("held", [False, True], ids=["donating", "held"])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_labels_out_of_range_raise_numpy_s_error_and_change_nothing(kind, held):
    """XLA would clamp the labels and train; the run is checked, and the call
    made again on numpy raises its error (with the labels it saw)."""
    errors, states = {}, {}
    for name in ("numpy", "xla"):
        with backend(name):
            model, opt = make(kind=kind)
            step = to_static(_standard(model, opt))
            step(*batch(0))
            step(*batch(1))
            if name == "xla":
                [exe] = _executables(step, *batch(0))
                assert exe.donates and exe.checked  # checked, and still donating
            arrays = [t.numpy() for t in state_tensors(model, opt)] if held else []
            copies = [a.copy() for a in arrays]
            before = snapshot(model, opt)
            x, y = batch(2)
            for label in (4, -1, 2 ** 40):
                with pytest.raises(ValueError) as e:
                    step(x, _labels_out_of_range(y, label))
                errors.setdefault(name, []).append(str(e.value))
            assert bitwise(snapshot(model, opt), before)
            assert all(t._value is not None for t in state_tensors(model, opt))
            assert all(np.array_equal(a, c) for a, c in zip(arrays, copies))
            step(x, y)  # and training goes on
            states[name] = snapshot(model, opt)
    assert errors["xla"] == errors["numpy"]
    assert errors["xla"][0].startswith("cross_entropy: labels must lie in [0, 4), got [0, 4]")
    with backend("xla"):
        assert same(states["xla"], states["numpy"])


@pytest.mark.parametrize("grad", [False, True], ids=["no-grad", "taped"])
def test_a_converted_loss_with_labels_out_of_range_raises_numpy_s_error(grad):
    errors = {}
    for name in ("numpy", "xla"):
        with backend(name):
            model, _ = make(kind="sgd")
            loss_of = to_static(lambda x, y: F.cross_entropy(model(x), y))
            x, y = batch(0)
            ctx = contextlib.nullcontext() if grad else d2s.no_grad()
            with ctx:
                loss_of(x, y)
                loss_of(x, y)  # (the per-call path, where there is one)
                with pytest.raises(ValueError) as e:
                    loss_of(x, _labels_out_of_range(y, 9))
                assert np.isfinite(loss_of(x, y).numpy())  # and it goes on
            errors[name] = str(e.value)
    assert errors["xla"] == errors["numpy"]


def test_a_checked_forward_keeps_its_per_call_path_and_raises_as_numpy():
    """A forward with run-time checks (a kernel's label check, an `assert`)
    called without gradients: cache hits take the per-call path, a failed
    check raises numpy's error from it, and the next call goes on."""
    def loss_and_check(model):
        def f(x, y, limit):
            loss = F.cross_entropy(model(x), y)
            assert loss < limit, "loss too high"
            return loss
        return f

    x, y = batch(0)
    results, errors = {}, {}
    for name in ("numpy", "xla"):
        with backend(name), d2s.no_grad():
            model, _ = make(kind="sgd")
            f = to_static(loss_and_check(model))
            ok = d2s.to_tensor(100.0)
            results[name] = [f(x, y, ok).numpy() for _ in range(3)]
            program = f.get_concrete_program(x, y, ok)
            if name == "xla":
                assert program.fast_calls.get("xla") is not None  # the per-call path
            with pytest.raises(ValueError) as labels:
                f(x, _labels_out_of_range(y, 9), ok)
            with pytest.raises(AssertionError, match="loss too high") as check:
                f(x, y, d2s.to_tensor(0.0))
            results[name].append(f(x, y, ok).numpy())  # and it goes on
            errors[name] = (str(labels.value), str(check.value))
    assert errors["xla"] == errors["numpy"]
    assert all(np.allclose(a, b, rtol=1e-5) for a, b in zip(results["xla"], results["numpy"]))
