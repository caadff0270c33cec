"""Read guards (jit.read_guards): the plain Python values a trace read from
state the caller keeps are conditions of the program. A Layer attribute, an
attribute of a plain object the layer or an argument holds, a dict item, a
module global read only by a called helper, a swapped sublayer: each is
changed between calls, and the converted function must compute what the
same code computes eagerly, on numpy and xla. A list the trace only appends
to needs no guard on its length: one program serves every call."""
import warnings

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.core.tensor import Tensor
from d2s.jit.concrete_program import GuardedProgram
from d2s.static.ir import Variable

from no_variables_left import assert_no_variables_left

BACKENDS = ["numpy", "xla"]
TRACES = []   # appended to by traced code: once per trace (a Python side effect)
SCALE = 1.0   # read only by `_scaled`, a function the converted one calls


def _backend(name):
    if name == "xla":
        pytest.importorskip("jax")
    return name


def t(value):
    return d2s.to_tensor(np.asarray(value, dtype="float32"))


def _pair(make, backend):
    """(eager layer, its converted twin's forward, the twin)."""
    eager, model = make(), make()
    model.set_state_dict(eager.state_dict())
    return eager, d2s.jit.to_static(model.forward, backend=_backend(backend)), model


class Cfg:
    def __init__(self, t):
        self.t = t


class Tempered(nn.Layer):
    """A float attribute read (never written) in forward."""

    def __init__(self):
        super().__init__()
        self.temperature = 1.0
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        TRACES.append("tempered")
        return self.fc(x) / self.temperature


class Configured(nn.Layer):
    """An attribute of a plain object the layer holds, and a dict item."""

    def __init__(self):
        super().__init__()
        self.cfg = Cfg(1.0)
        self.opts = {"scale": 1.0, "shift": 0}

    def forward(self, x):
        return x / self.cfg.t * self.opts["scale"] + self.opts["shift"]


class Headed(nn.Layer):
    """A sublayer the caller swaps (a new classification head)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(3, 3)
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        return self.head(self.body(x))


class Scaled(nn.Layer):
    def __init__(self, k=1.0):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.k = k

    def forward(self, h):
        return self.fc(h) * self.k


class Stacked(nn.Layer):
    """Sublayers in a LayerList (indexed, counted) and a Sequential (called)."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.LayerList([Scaled(), Scaled()])
        self.seq = nn.Sequential(nn.Linear(3, 3))

    def forward(self, h):
        for i in range(len(self.blocks)):
            h = self.blocks[i](h)
        return self.seq(h)


class Logging(nn.Layer):
    """A list the forward only appends to (a loss history)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.losses = []

    def forward(self, x):
        TRACES.append("logging")
        y = self.fc(x)
        self.losses.append(y.sum())
        return y


class Counting(nn.Layer):
    """A list whose length the forward reads: the length is a condition."""

    def __init__(self):
        super().__init__()
        self.hist = []

    def forward(self, x):
        y = x * float(len(self.hist) + 1)
        self.hist.append(y.sum())
        return y


def _scaled(v):
    return v * SCALE


def _uses_helper(x):
    return _scaled(x) + 1.0


def _reads_arg_attr(x, c):
    return x * c.t


def _changes(name):
    """Per case: a function changing both models (eager first, converted second)."""
    def temperature(e, m, v):
        e.temperature = m.temperature = v

    def cfg_attr(e, m, v):
        e.cfg.t = m.cfg.t = v

    def dict_item(e, m, v):
        e.opts["scale"] = m.opts["scale"] = v

    def dict_int_item(e, m, v):
        e.opts["shift"] = m.opts["shift"] = int(v)

    def cfg_object(e, m, v):  # a new object on the access path
        e.cfg, m.cfg = Cfg(v), Cfg(v)

    return {"temperature": (Tempered, temperature), "cfg_attr": (Configured, cfg_attr),
            "dict_item": (Configured, dict_item), "dict_int_item": (Configured, dict_int_item),
            "cfg_object": (Configured, cfg_object)}[name]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["temperature", "cfg_attr", "dict_item", "dict_int_item",
                                  "cfg_object"])
def test_plain_value_changed_between_calls(backend, case):
    make, change = _changes(case)
    eager, fn, model = _pair(make, backend)
    x = t(np.arange(6).reshape(2, 3) + 1.0)
    for value in [1.0, 2.0, 4.0, 2.0, 1.0]:
        change(eager, model, value)
        np.testing.assert_allclose(fn(x).numpy(), eager(x).numpy(), rtol=1e-6,
                                   err_msg=f"{case}={value}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_unchanged_values_keep_one_program(backend):
    """Guards that hold trace nothing again; a value seen before reuses its program."""
    eager, fn, model = _pair(Tempered, backend)
    x = t([[1.0, 2.0, 3.0]])
    TRACES.clear()
    for _ in range(4):
        fn(x)
    assert TRACES == ["tempered"]
    model.temperature = 2.0
    fn(x)
    model.temperature = 1.0
    for _ in range(3):
        fn(x)
    assert TRACES == ["tempered", "tempered"]
    assert isinstance(fn.concrete_program, GuardedProgram)


@pytest.mark.parametrize("backend", BACKENDS)
def test_attribute_of_an_argument_object(backend):
    fn = d2s.jit.to_static(_reads_arg_attr, backend=_backend(backend))
    cfg, x = Cfg(1.0), t([[1.0, 2.0]])
    for value in [1.0, 7.0, 3.0]:
        cfg.t = value
        np.testing.assert_allclose(fn(x, cfg).numpy(), _reads_arg_attr(x, cfg).numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_global_read_by_a_called_function(backend):
    global SCALE
    fn = d2s.jit.to_static(_uses_helper, backend=_backend(backend))
    x = t([[1.0, 2.0]])
    try:
        for value in [1.0, 3.0, 0.5]:
            SCALE = value
            np.testing.assert_allclose(fn(x).numpy(), _uses_helper(x).numpy())
    finally:
        SCALE = 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_swapped_sublayer(backend):
    eager, fn, model = _pair(Headed, backend)
    x = t([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(fn(x).numpy(), eager(x).numpy(), rtol=1e-6)
    head = nn.Linear(3, 4)
    eager.head = head
    model.head = head
    out = fn(x)
    assert tuple(out.shape) == (1, 4)
    np.testing.assert_allclose(out.numpy(), eager(x).numpy(), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("change", ["replace_item", "append_item", "item_attr",
                                    "sequential_grows"])
def test_layer_containers_changed_between_calls(backend, change):
    eager, fn, model = _pair(Stacked, backend)
    x = t([[1.0, -2.0, 0.5]])
    np.testing.assert_allclose(fn(x).numpy(), eager(x).numpy(), rtol=1e-5)
    new = Scaled(3.0)
    for m in (eager, model):
        if change == "replace_item":
            m.blocks[1] = new
        elif change == "append_item":
            m.blocks.append(new)
        elif change == "item_attr":
            m.blocks[0].k = 0.5
        else:
            m.seq.add_sublayer("1", nn.Tanh())
    np.testing.assert_allclose(fn(x).numpy(), eager(x).numpy(), rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_list_only_appended_to_is_one_program(backend):
    eager, fn, model = _pair(Logging, backend)
    x = t([[1.0, 2.0, 3.0]])
    TRACES.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outs = [fn(x * float(i + 1)).numpy() for i in range(10)]
    assert TRACES == ["logging"]
    for i, out in enumerate(outs):  # (eager calls append to TRACES too)
        np.testing.assert_allclose(out, eager(x * float(i + 1)).numpy(), rtol=1e-6)
    assert len(model.losses) == 10
    assert all(type(v) is Tensor and not isinstance(v, Variable) for v in model.losses)
    np.testing.assert_allclose([float(v) for v in model.losses],
                               [float(v) for v in eager.losses], rtol=1e-6)
    assert_no_variables_left(("model", model))
    # a new list for the attribute: the program appends to it, not to the old one
    model.losses = []
    fn(x)
    assert len(model.losses) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_list_length_read_is_a_condition(backend):
    eager, fn, model = _pair(Counting, backend)
    x = t([[1.0, 2.0]])
    for i in range(4):
        np.testing.assert_allclose(fn(x).numpy(), eager(x).numpy(), err_msg=f"call {i}")
    assert len(model.hist) == 4


def test_past_the_variant_limit_warns_naming_the_attribute():
    eager, fn, model = _pair(Tempered, "numpy")
    x = t([[1.0, 2.0, 3.0]])
    with pytest.warns(UserWarning, match=r"self\.temperature \(read at .*test_read_guards"):
        for i in range(GuardedProgram.MAX_VARIANTS + 2):
            model.temperature = eager.temperature = 1.0 + i
            np.testing.assert_allclose(fn(x).numpy(), eager(x).numpy(), rtol=1e-6)


def test_a_function_reading_nothing_has_no_guards():
    fn = d2s.jit.to_static(lambda x: x * 2.0)
    fn(t([1.0]))
    assert not isinstance(fn.concrete_program, GuardedProgram)


def _train(static, backend):
    """Losses and final weights of 6 SGD steps on a Tempered model whose
    temperature changes after the third step (a whole training step)."""
    np.random.seed(0)
    model = Tempered()
    model.fc.weight.set_value(np.eye(3, dtype="float32") * 0.5)
    opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())

    def step(x):
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    if static:
        step = d2s.jit.to_static(step, backend=_backend(backend))
    x = t([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    losses = []
    for i in range(6):
        if i == 3:
            model.temperature = 2.0
        losses.append(float(step(x)))
    return losses, model.fc.weight.numpy()


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_step_reads_the_attribute_now(backend):
    eager_losses, eager_w = _train(False, backend)
    losses, w = _train(True, backend)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5)
    np.testing.assert_allclose(w, eager_w, rtol=1e-5)
