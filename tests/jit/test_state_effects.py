"""State that outlives the call (DESIGN §4, issue 25 item 1): a traced value
written into a Layer attribute or buffer, a caller's list or dict, a global
or a plain object is recorded while tracing and written after each
successful run; a run that raises writes nothing; a failed trace leaves
every object as it was; no static Variable is ever left behind.

Each test runs an eager twin on the same inputs and compares, call after
call, the results and the state the calls leave, on numpy and xla.
"""
import collections

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static
from d2s.static import ControlFlowError

from no_variables_left import assert_no_variables_left, variables_left

BACKENDS = ["numpy", "xla"]


def _backend(name):
    if name == "xla":
        pytest.importorskip("jax")
    return name


def t(value):
    return d2s.to_tensor(np.asarray(value, dtype="float32"))


def _value(v):
    return np.asarray(v.numpy() if isinstance(v, d2s.Tensor) else v)


def _same(a, b, what, exact):
    a, b = _value(a), _value(b)
    assert a.shape == b.shape, what
    if exact:
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=what)


# ---- Layer attributes and buffers ------------------------------------------------------

class _Counter(nn.Layer):
    """A buffer, a plain tensor attribute, a Python int made a tensor by a
    tensor `if`, and a history list, all written in forward."""

    def __init__(self):
        super().__init__()
        self.register_buffer("total", t([0.0, 0.0]))
        self.last = t([0.0, 0.0])
        self.positives = 0
        self.history = []

    def forward(self, x):
        self.total = self.total + x
        if x.sum() > 0:
            self.positives += 1
            self.last = x * 2.0
        else:
            self.last = x * 3.0
        self.history.append(self.total * 1.0)
        return self.total + self.last


@pytest.mark.parametrize("backend", BACKENDS)
def test_layer_attribute_buffer_and_history_writes_match_eager_call_after_call(backend):
    static, eager = _Counter(), _Counter()
    to_static(static, backend=_backend(backend))
    for value in ([1.0, 2.0], [-3.0, 1.0], [0.5, 0.5], [-1.0, -1.0], [2.0, 0.0]):
        _same(static(t(value)), eager(t(value)), "output", backend == "numpy")
        for name in ("total", "last", "positives"):
            _same(getattr(static, name), getattr(eager, name), name, backend == "numpy")
        assert len(static.history) == len(eager.history)
        for a, b in zip(static.history, eager.history):
            _same(a, b, "history", backend == "numpy")
        assert_no_variables_left(("layer", static))
    assert "total" in static.state_dict()
    _same(static.state_dict()["total"], eager.total, "state_dict", backend == "numpy")


class _Accumulates(nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("acc", t([0.0]))

    def forward(self, x, n):
        i = 0
        while i < n:
            self.acc = self.acc + x
            i += 1
        return self.acc * 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_buffer_written_in_a_tensor_while_loop_is_written_back(backend):
    static, eager = _Accumulates(), _Accumulates()
    to_static(static, backend=_backend(backend))
    for n in (3, 0, 2):
        nt = d2s.to_tensor(np.asarray(n, dtype="int64"))
        _same(static(t([1.5]), nt), eager(t([1.5]), nt), "output", True)
        _same(static.acc, eager.acc, "acc", True)
    assert len(static.forward.program_cache) == 1
    assert_no_variables_left(("layer", static))


class _RunningMean(nn.Layer):
    """User-written running statistics, as the issue's BatchNorm writes them."""

    def __init__(self, n):
        super().__init__()
        self.register_buffer("_mean", t(np.zeros(n)))
        self.register_buffer("steps", d2s.to_tensor(np.asarray(0, dtype="int64")))

    def forward(self, x):
        if self.training:
            self._mean = self._mean * 0.9 + x.mean(axis=0).detach() * 0.1
            self.steps = self.steps + 1
        return x - self._mean


class _Outer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.norm = _RunningMean(3)

    def forward(self, x):
        return self.norm(self.fc(x)).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_sublayer_writes_with_train_and_eval_switches_and_gradients(backend):
    np.random.seed(0)
    static, eager = _Outer(), _Outer()
    eager.set_state_dict(static.state_dict())
    to_static(static, backend=_backend(backend))
    exact = backend == "numpy"
    for step in range(8):
        if step == 4:
            static.eval(), eager.eval()
        if step == 6:
            static.train(), eager.train()
        x = t(np.random.randn(4, 3))
        ls, le = static(x), eager(x)
        _same(ls, le, f"loss {step}", exact)
        ls.backward(), le.backward()
        _same(static.fc.weight.grad, eager.fc.weight.grad, "grad", exact)
        static.fc.weight.clear_grad(), eager.fc.weight.clear_grad()
        _same(static.norm._mean, eager.norm._mean, f"mean {step}", exact)
        _same(static.norm.steps, eager.norm.steps, f"steps {step}", True)
        assert_no_variables_left(("layer", static))
    assert int(static.norm.steps.numpy()) == 6


# ---- caller-held lists and dicts, globals, plain objects -------------------------------

_GLOBAL = collections.defaultdict(float)
_REGISTRY = {"calls": []}


class _Box:
    pass


def _writes_everywhere(x, log, table, box):
    y = x * 2.0
    log.append(y)
    table["last"] = y + 1.0
    box.value = y.sum()
    _GLOBAL["sum"] = _GLOBAL["sum"] + x.sum()
    _REGISTRY["calls"].append((y, "tag"))
    return y


def _run_writes(fn, calls):
    _GLOBAL.clear()
    _REGISTRY["calls"].clear()
    log, table, box = [], {}, _Box()
    states = []
    for value in calls:
        out = fn(t(value), log, table, box)
        states.append((out, list(log), dict(table), box.value, _GLOBAL["sum"],
                       list(_REGISTRY["calls"])))
        assert_no_variables_left(("log", log), ("table", table), ("box", box),
                                 ("_GLOBAL", _GLOBAL), ("_REGISTRY", _REGISTRY))
    return states


@pytest.mark.parametrize("backend", BACKENDS)
def test_writes_to_caller_lists_dicts_objects_and_globals_match_eager(backend):
    calls = [[1.0, 2.0], [3.0, -1.0], [0.0, 4.0], [1.0, 1.0]]
    eager = _run_writes(_writes_everywhere, calls)
    static = _run_writes(to_static(_writes_everywhere, backend=_backend(backend)), calls)
    exact = backend == "numpy"
    for (o1, log1, tab1, box1, g1, r1), (o2, log2, tab2, box2, g2, r2) in zip(static, eager):
        _same(o1, o2, "out", exact)
        assert len(log1) == len(log2)
        for a, b in zip(log1, log2):
            _same(a, b, "log", exact)
        assert tab1.keys() == tab2.keys()
        _same(tab1["last"], tab2["last"], "table", exact)
        _same(box1, box2, "box", exact)
        _same(g1, g2, "global defaultdict", exact)
        assert [tag for _, tag in r1] == [tag for _, tag in r2]
        for (a, _), (b, _) in zip(r1, r2):
            _same(a, b, "registry", exact)


# ---- transactions: a run that raises, a trace that fails -------------------------------

class _Checks(nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("seen", t([0.0]))
        self.history = []

    def forward(self, x):
        self.seen = self.seen + x.sum()
        self.history.append(x)
        if x.sum() > 100.0:
            raise ValueError("input too large")
        return x * 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_that_raises_performs_none_of_the_writes(backend):
    layer = _Checks()
    to_static(layer, backend=_backend(backend))
    layer(t([1.0, 2.0]))
    seen, history = layer.seen, list(layer.history)
    seen_value = seen.numpy().copy()
    with pytest.raises(ValueError, match="input too large"):
        layer(t([100.0, 2.0]))
    assert layer.seen is seen and len(layer.history) == len(history)
    np.testing.assert_array_equal(layer.seen.numpy(), seen_value)
    layer(t([1.0, 1.0]))
    np.testing.assert_array_equal(layer.seen.numpy(), seen_value + 2.0)
    assert len(layer.history) == 2
    assert_no_variables_left(("layer", layer))


_FAIL_TABLE = {"kept": 1}


class _FailsLate(nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("seen", t([0.0]))
        self.history = []

    def forward(self, x, log):
        self.seen = self.seen + x.sum()
        self.note = x * 2.0
        self.calls = 5
        self.history.append(x)
        log.append(x)
        _FAIL_TABLE["new"] = x
        _FAIL_TABLE["kept"] = 2
        del _FAIL_TABLE["kept"]
        raise RuntimeError("failed after the writes")


def test_a_failed_trace_leaves_every_object_as_it_was():
    layer, log = _FailsLate(), [1]
    seen = layer.seen
    before = dict(vars(layer))
    table = dict(_FAIL_TABLE)
    with pytest.raises(RuntimeError, match="failed after the writes"):
        to_static(layer)(t([1.0]), log)
    assert all(vars(layer)[k] is v for k, v in before.items())
    assert set(vars(layer)) - {"forward"} == set(before)
    assert layer.seen is seen and dict(layer._buffers) == {"seen": seen}
    assert layer.history == [] and log == [1] and _FAIL_TABLE == table
    assert_no_variables_left(("layer", layer), ("log", log), ("table", _FAIL_TABLE))


# ---- what cannot be replayed: a clear error ----------------------------------------------

def _replaces_items(x, log):
    log.pop(0)
    log.append(x * 2.0)
    return x


def test_a_list_write_that_cannot_replay_names_the_list_and_what_to_write():
    log = [1, 2]
    with pytest.raises(ControlFlowError, match=r"argument .log.*lost or moved items.*return it"):
        to_static(_replaces_items)(t([1.0]), log)
    assert log == [1, 2]


class _ChangesABuffersShape(nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("state", t([0.0, 0.0]))

    def forward(self, x):
        out = x + self.state.sum()
        self.state = x.sum(axis=1)   # one value per row: another shape than it had
        return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_buffer_given_another_shape_is_replaced_and_read_again(backend):
    # (not updated in place: replaced as eagerly; the program read the old
    # shape, so the next call builds the program for the new one)
    static, eager = _ChangesABuffersShape(), _ChangesABuffersShape()
    to_static(static, backend=_backend(backend))
    for value in ([[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]], [[1.0, 1.0]]):
        _same(static(t(value)), eager(t(value)), "out", True)
        _same(static.state, eager.state, "state", True)
        assert dict(static.named_buffers())["state"] is static.state
        assert_no_variables_left(("layer", static))


# ---- a training step ----------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_a_training_step_updates_buffers_with_the_parameters(backend):
    np.random.seed(1)
    models = [_Outer(), _Outer()]
    models[1].set_state_dict(models[0].state_dict())
    opts = [d2s.optimizer.SGD(0.1, parameters=m.parameters()) for m in models]

    def make_step(model, opt):
        def step(x):
            loss = model(x)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return step

    static = to_static(make_step(models[0], opts[0]), backend=_backend(backend))
    eager = make_step(models[1], opts[1])
    exact = backend == "numpy"
    for i in range(5):
        x = t(np.random.randn(4, 3))
        _same(static(x), eager(x), f"loss {i}", exact)
        _same(models[0].norm._mean, models[1].norm._mean, f"mean {i}", exact)
        _same(models[0].fc.weight, models[1].fc.weight, f"weight {i}", exact)
        _same(models[0].norm.steps, models[1].norm.steps, "steps", True)
        assert_no_variables_left(("model", models[0]))


# ---- writes made by a called helper -------------------------------------------------------

_HELPER_CACHE = {}


def _remember(key, value):
    _HELPER_CACHE[key] = value


def _calls_a_helper(x):
    y = x + 1.0
    _remember("y", y)
    return y * 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_global_written_by_a_called_helper_is_written_back(backend):
    static = to_static(_calls_a_helper, backend=_backend(backend))
    for value in ([1.0], [5.0]):
        _HELPER_CACHE.clear()
        _calls_a_helper(t(value))
        want = _HELPER_CACHE["y"]
        _HELPER_CACHE.clear()
        static(t(value))
        _same(_HELPER_CACHE["y"], want, "cache", True)
        assert_no_variables_left(("cache", _HELPER_CACHE))


_LOSSES = []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_training_step_appends_its_loss_and_keeps_it_on_the_model(backend):
    np.random.seed(3)
    models = [_Outer(), _Outer()]
    models[1].set_state_dict(models[0].state_dict())
    opts = [d2s.optimizer.SGD(0.1, parameters=m.parameters()) for m in models]

    def make_step(model, opt):
        def step(x):
            loss = model(x)
            loss.backward()
            opt.step()
            opt.clear_grad()
            _LOSSES.append(loss * 1.0)
            model.last_loss = loss
            return loss
        return step

    static = to_static(make_step(models[0], opts[0]), backend=_backend(backend))
    eager = make_step(models[1], opts[1])
    exact = backend == "numpy"
    _LOSSES.clear()
    xs = [t(np.random.randn(4, 3)) for _ in range(4)]
    for x in xs:
        static(x)
    got = list(_LOSSES)
    _LOSSES.clear()
    for x in xs:
        eager(x)
    assert len(got) == len(_LOSSES) == 4
    for a, b in zip(got, _LOSSES):
        _same(a, b, "losses", exact)
    _same(models[0].last_loss, models[1].last_loss, "last_loss", exact)
    _same(models[0].norm._mean, models[1].norm._mean, "mean", exact)
    assert_no_variables_left(("model", models[0]), ("losses", _LOSSES))


class _State:
    def __init__(self, h, step):
        self.h = h
        self.step = step


class _KeepsAnObject(nn.Layer):
    def forward(self, x):
        self.state = _State(x * 2.0, "step")
        return x


def test_a_new_plain_object_holding_traced_values_is_rebuilt_per_run():
    layer, eager = _KeepsAnObject(), _KeepsAnObject()
    to_static(layer)
    states = []
    for value in ([1.0], [3.0]):
        layer(t(value)), eager(t(value))
        assert type(layer.state) is _State and layer.state.step == "step"
        _same(layer.state.h, eager.state.h, "h", True)
        states.append(layer.state)
        assert_no_variables_left(("layer", layer))
    assert states[0] is not states[1]
    _same(states[0].h, [2.0], "first", True)
