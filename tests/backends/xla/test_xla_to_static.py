"""`to_static(..., backend=)`: converted functions run on XLA — values, the
autograd bridge, fallbacks, errors and caches equal to the numpy backend's.

Differential: every function runs on both backends from the same inputs
(the numpy backend is the reference), with tensor values (the program has
`cond` / `while`) and with Python values (plain Python semantics)."""
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.nn as nn  # noqa: E402
from d2s.core.registry import OPS, NotLowerable  # noqa: E402
from d2s.jit import InputSpec, to_static  # noqa: E402
from d2s import backends as backend_state  # noqa: E402
from d2s.static.backend import BackendFallbackWarning  # noqa: E402

from xla_helpers import assert_same, op_types  # noqa: E402


@pytest.fixture
def default_backend():
    """Restores the global default backend after the test."""
    saved = dict(backend_state._STATE)
    yield
    backend_state._STATE.update(saved)


def T(value, dtype="float64", grad=False):
    return d2s.to_tensor(np.asarray(value, dtype), stop_gradient=not grad)


def both(fn, *args):
    """(numpy results, xla results) of `fn` converted for each backend; equal."""
    results = []
    for backend in ("numpy", "xla"):
        out = to_static(fn, backend=backend)(*args)
        results.append([np.asarray(o.numpy() if hasattr(o, "numpy") else o)
                        for o in (out if isinstance(out, tuple) else (out,))])
    assert_same(results[1], results[0])
    return results


def _xla_executables(sf, *args):
    runner = sf.get_concrete_program(*args)._runners["xla"]
    return runner._forward.xla._executables


# ---- values: tensor control flow and Python values --------------------------------
def collatz(n):
    steps = d2s.zeros([], "int64")
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps = steps + 1
    return steps


def scaled(x, k, flag):
    if flag:                   # Python value: plain Python
        x = x * k
    total = x.sum()
    while total < 50.0:        # tensor: a while op
        x = x * 1.5 + 0.25
        total = x.sum()
    if x.max() > 40.0:         # tensor: a cond op
        y = d2s.tanh(x) + x * 0.5
    else:
        y = x - 1.0
    return y, total


def test_tensor_control_flow_builds_cond_and_while_and_equals_numpy(strict):
    sf = to_static(collatz, backend="xla")
    got = sf(T(27, "int64"))
    assert got.numpy() == 111 and got.dtype == np.int64
    assert {"while", "cond"} <= op_types(sf.get_concrete_program(T(27, "int64")).main_program)
    assert _xla_executables(sf, T(27, "int64"))  # it ran on XLA
    for dtype in ("float32", "float64"):
        x = T([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype)
        both(scaled, x, 2.0, True)
        both(scaled, x, 3.0, False)
        program = to_static(scaled).get_concrete_program(x, 2.0, True).main_program
        assert {"while", "cond"} <= op_types(program)


def test_python_values_keep_python_semantics(strict):
    def f(x, n, mode):
        for _ in range(n):     # Python int: unrolled
            x = x + 1.0
        if mode == "double":   # Python str: plain Python
            x = x * 2.0
        return x
    sf = to_static(f, backend="xla")
    x = T([1.0, 2.0])
    np.testing.assert_array_equal(sf(x, 3, "double").numpy(), [8.0, 10.0])
    np.testing.assert_array_equal(sf(x, 0, "other").numpy(), [1.0, 2.0])
    assert not {"while", "cond"} & op_types(sf.get_concrete_program(x, 3, "double").main_program)
    both(f, x, 2, "double")


def test_a_python_function_without_tensor_ops_returns_python_values(strict):
    def f(x, n):
        return x * 2.0, n + 1, None
    y, m, none = to_static(f, backend="xla")(T([1.0]), 4)
    assert m == 5 and none is None
    np.testing.assert_array_equal(y.numpy(), [2.0])


# ---- backend selection and the program cache --------------------------------------
def test_the_global_default_is_read_at_each_call_and_never_rebuilds(strict, default_backend):
    sf = to_static(scaled)
    x = T([[0.5, -1.0, 2.0]])
    d2s.jit.set_backend("numpy")
    want = sf(x, 2.0, True)
    concrete = sf.get_concrete_program(x, 2.0, True)
    printed = str(concrete.main_program)
    assert "xla" not in concrete._runners
    d2s.jit.set_backend("xla")
    got = sf(x, 2.0, True)
    assert "xla" in concrete._runners                  # it ran on XLA ...
    assert sf.get_concrete_program(x, 2.0, True) is concrete   # ... the same program
    assert len(sf.program_cache) == 1 and sf.program_cache.builds == 1
    assert str(concrete.main_program) == printed       # printing does not change
    assert_same([g.numpy() for g in got], [w.numpy() for w in want])
    assert sf.backend == "xla"
    d2s.jit.set_backend("numpy")
    assert sf.backend == "numpy" and to_static(scaled, backend="xla").backend == "xla"


def test_an_unknown_backend_name_fails_at_decoration():
    with pytest.raises(ValueError, match="backend: unknown backend 'tpu'"):
        to_static(collatz, backend="tpu")


def test_a_layer_method_and_a_layer_run_on_the_chosen_backend(strict):
    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            h = self.fc(x)
            if h.sum() > 0:
                h = d2s.tanh(h)
            return h

    d2s.seed(0)
    net = to_static(Net(), backend="xla")
    x = T(np.random.default_rng(0).normal(size=(4, 3)), "float32")
    got = net(x)
    assert net.forward.backend == "xla"
    assert "xla" in net.forward.get_concrete_program(x)._runners
    want = to_static(Net.forward, backend="numpy")(net, x)
    assert_same([got.numpy()], [want.numpy()])


# ---- gradients --------------------------------------------------------------------
def loop_with_break_and_early_return(x, w, limit):
    h = x
    k = 0
    while k < 10:
        h = d2s.tanh(h * w + 0.1)
        if h.sum() > limit:
            break
        k += 1
    if h.mean() < -0.5:
        return h * 2.0
    return h * h + w


@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-5), ("float64", 1e-10)])
@pytest.mark.parametrize("limit", [0.5, 100.0])   # breaks early / runs to the end
def test_gradients_through_while_break_and_early_return_equal_numpy(strict, dtype, rtol, limit):
    rng = np.random.default_rng(3)
    x0, w0 = rng.normal(size=(2, 3)), rng.normal(size=(3,))
    grads, values = {}, {}
    for backend in ("numpy", "xla"):
        x, w = T(x0, dtype, grad=True), T(w0, dtype, grad=True)
        sf = to_static(loop_with_break_and_early_return, backend=backend)
        out = sf(x, w, limit)
        (out * out).sum().backward()
        grads[backend] = [x.grad.numpy(), w.grad.numpy()]
        values[backend] = out.numpy()
        ops = op_types(sf.get_concrete_program(x, w, limit)._backward.program)
        assert {"while", "cond", "while_grad", "cond_grad"} <= ops
    for g, want in zip(grads["xla"], grads["numpy"]):
        assert g.dtype == want.dtype == np.dtype(dtype)
        # rtol relative to the gradient's scale: an element near cancellation
        # differs by rounding only (XLA's is not numpy's)
        np.testing.assert_allclose(g, want, rtol=rtol, atol=rtol * np.abs(want).max())
    np.testing.assert_allclose(values["xla"], values["numpy"], rtol=rtol,
                               atol=rtol * np.abs(values["numpy"]).max())


def test_gradients_check_against_finite_differences_on_xla(strict):
    def f(x):
        total = x.sum()
        while total < 20.0:
            x = x * 1.3 + d2s.tanh(x)
            total = x.sum()
        return (x * x).sum()
    sf = to_static(f, backend="xla")
    x0 = np.array([0.3, 0.9, 1.2])
    x = T(x0, grad=True)
    sf(x).backward()
    eps = 1e-6
    numeric = []
    for i in range(3):
        e = np.zeros(3)
        e[i] = eps
        numeric.append((sf(T(x0 + e)).item() - sf(T(x0 - e)).item()) / (2 * eps))
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-5)


def test_a_loop_history_that_outgrows_its_room_recompiles_and_gradients_stay_right(strict):
    def f(x):
        while x.sum() < 1000.0:         # ~150 trips: past the initial 64 rows
            x = x * 1.02 + 0.01
        return x.sum()
    grads = {}
    for backend in ("numpy", "xla"):
        x = T([0.5, 0.25], grad=True)
        for _ in range(2):              # the second run reuses the grown executables
            x.clear_grad()
            to_static(f, backend=backend)(x).backward()
        grads[backend] = x.grad.numpy()
    np.testing.assert_allclose(grads["xla"], grads["numpy"], rtol=1e-10)


def test_training_a_layer_on_xla_equals_numpy_and_parameters_are_never_stale(strict):
    class RNN(nn.Layer):
        def __init__(self):
            super().__init__()
            self.cell = nn.Linear(4 + 8, 8)
            self.head = nn.Linear(8, 2)

        def forward(self, x):
            h = d2s.zeros([1, 8])
            for t in range(len(x)):    # a while op: the length is a run-time value
                row = d2s.reshape(x[t], [1, 4])   # (x[t:t + 1] has tensor bounds: numpy)
                h = d2s.tanh(self.cell(d2s.concat([row, h], axis=1)))
            return self.head(h)

    seq = T(np.random.default_rng(1).normal(size=(5, 4)), "float32")
    losses = {}
    for backend in ("numpy", "xla"):
        d2s.seed(7)
        rnn = RNN()
        rnn.forward = to_static(rnn.forward, backend=backend,
                                input_spec=[InputSpec([None, 4], "float32")])
        opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=rnn.parameters())
        run = []
        for _ in range(4):
            loss = d2s.nn.functional.cross_entropy(rnn(seq), d2s.to_tensor([1]))
            loss.backward()
            opt.step()
            opt.clear_grad()
            run.append(loss.item())
        losses[backend] = run
        assert len(rnn.forward.program_cache) == 1
    np.testing.assert_allclose(losses["xla"], losses["numpy"], rtol=1e-5)
    assert losses["xla"][-1] < losses["xla"][0]


def test_a_backward_that_cannot_lower_runs_on_numpy_with_one_warning(monkeypatch):
    def f(x, b):
        return d2s.tanh(x + b).sum()   # broadcasting: the backward sums (sum_to_like)
    monkeypatch.setitem(OPS["sum_to_like"].lowerings, "xla", NotLowerable("test: no rule"))
    grads = {}
    for backend in ("numpy", "xla"):
        x, b = T([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], grad=True), T([0.5, -0.5, 0.1], grad=True)
        sf = to_static(f, backend=backend)
        if backend == "xla":
            with pytest.warns(BackendFallbackWarning, match="op 'sum_to_like'.*test: no rule"):
                sf(x, b).backward()
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                x.clear_grad()
                b.clear_grad()
                sf(x, b).backward()       # decided once: no second warning
        else:
            sf(x, b).backward()
        grads[backend] = [x.grad.numpy(), b.grad.numpy()]
    for g, want in zip(grads["xla"], grads["numpy"]):
        np.testing.assert_allclose(g, want, rtol=1e-12)


# ---- fallback, errors, caches -----------------------------------------------------
def noisy(x):
    if x.sum() > 0:  # a draw under a tensor `if`: how many a run makes depends on the data
        x = x + d2s.rand([3]) * 0.0     # LOC: the op the warning names
    return x


def test_an_unlowerable_op_runs_on_numpy_with_one_warning_naming_op_file_line():
    sf = to_static(noisy, backend="xla")
    x = T([1.0, 2.0, 3.0], "float32")
    with pytest.warns(BackendFallbackWarning,
                      match=r"op 'uniform' at .*test_xla_to_static.py, line \d+ .*d2s.rand"):
        got = sf(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = sf(x)
    assert_same([got.numpy(), again.numpy()], [x.numpy(), x.numpy()])


def branches_disagree(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = d2s.zeros([5])
    return y


@pytest.mark.parametrize("case", ["spec dtype", "spec shape", "branch outputs", "raise"])
def test_bad_input_gives_the_numpy_backends_error_and_leaves_no_cache_entry(case):
    def raising(x):
        if x.sum() > 100.0:
            raise ValueError("too big")
        return x
    spec = [InputSpec([None, 3], "float32")]
    fn, args = {
        "spec dtype": (lambda x: x * 2.0, (T(np.ones((2, 3)), "float64"),)),
        "spec shape": (lambda x: x * 2.0, (T(np.ones((2, 4)), "float32"),)),
        "branch outputs": (branches_disagree, (T([1.0, 2.0]),)),
        "raise": (raising, (T(np.full((1, 3), 50.0), "float32"),)),
    }[case]
    errors = []
    for backend in ("numpy", "xla"):
        sf = to_static(fn, backend=backend, input_spec=spec if "spec" in case or
                       case == "raise" else None)
        with pytest.raises(Exception) as info:
            sf(*args)
        errors.append((type(info.value), str(info.value)))
        if case != "raise":
            assert len(sf.program_cache) == 0   # nothing half-built was cached
    assert errors[0] == errors[1]


def test_a_failing_lowering_leaves_no_half_built_entry_and_names_the_op(monkeypatch):
    def f(x):
        return d2s.exp(x) * 2.0
    sf = to_static(f, backend="xla")
    x = T([0.5, 1.0])
    monkeypatch.setitem(OPS["exp"].lowerings, "xla",
                        lambda ns, x: (_ for _ in ()).throw(RuntimeError("rule bug")))
    with pytest.raises(RuntimeError, match=r"rule bug \(op 'exp' built at .*test_xla_to_static"):
        sf(x)
    assert _xla_executables(sf, x) == {}
    monkeypatch.undo()
    np.testing.assert_allclose(sf(x).numpy(), np.exp([0.5, 1.0]) * 2.0, rtol=1e-12)
    assert len(sf.program_cache) == 1 and len(_xla_executables(sf, x)) == 1


# ---- what runs, as text -----------------------------------------------------------
def test_the_stablehlo_is_viewable_like_the_converted_code(strict):
    sf = to_static(scaled, backend="xla")
    x = T([[0.5, -1.0, 2.0]], "float32")
    text = sf.lowered_text(x, 2.0, True)
    assert "stablehlo.while" in text and "stablehlo.case" in text
    assert "tensor<1x3xf32>" in text
    numpy_text = to_static(scaled, backend="numpy").lowered_text(x, 2.0, True)
    assert numpy_text.startswith("def forward(")
    assert "def scaled" in sf.code                 # .code: the converted Python


def test_stablehlo_of_none_dims_needs_example_inputs(strict):
    sf = to_static(lambda x: x * 2.0, backend="xla", input_spec=[InputSpec([None, 2])])
    concrete = sf.get_concrete_program(InputSpec([None, 2]))
    with pytest.raises(ValueError, match=r"input 'x' has shape \[None, 2\]: pass example"):
        concrete.lowered_text(backend="xla")
    assert "tensor<3x2xf32>" in concrete.lowered_text([T(np.ones((3, 2)), "float32")], "xla")


def test_each_call_runs_its_executable_once(monkeypatch, strict):
    """The per-call path a forward takes from its second call is made without
    running the program again (the first call used to run it twice)."""
    from d2s.backends.xla import program as xla_program
    runs = []
    real = xla_program.Executable.call

    def counting(self, args):
        runs.append(self)
        return real(self, args)
    monkeypatch.setattr(xla_program.Executable, "call", counting)
    layer = nn.Linear(3, 2)
    f = to_static(lambda x: d2s.tanh(layer(x)), backend="xla")
    x = np.arange(6.0).reshape(2, 3)
    with d2s.no_grad():
        got = [f(d2s.to_tensor(x)).numpy() for _ in range(3)]
    assert len(runs) == 1  # the first call; the next two took the per-call path
    want = np.tanh(x @ layer.weight.numpy() + layer.bias.numpy())
    for g in got:
        assert np.allclose(g, want, rtol=1e-12)
