"""A numpy array that converted code reads from state the caller keeps (a
module global, a Layer attribute, a dict or list item, a global read by a
called helper) is read for its contents, which the program freezes. A write
into the array between calls (`MASK[0] = 0`, `self.anchors *= 2`) changes
what eager code computes, so it must change what the converted function
computes too, on numpy and xla (core.array_contents); an array too large to
compare on every call is said once, by name."""
import warnings

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.core import array_contents

BACKENDS = ["numpy", "xla"]

MASK = np.array([1.0, 0.0, 1.0, 1.0], dtype="float32")
BIAS = np.zeros(4, dtype="float32")   # read only by `_biased`, a function the converted one calls
BIG = np.zeros(array_contents.CHECKED_BYTES // 4 + 1, dtype="float32")


def _backend(name):
    if name == "xla":
        pytest.importorskip("jax")
    return name


def _masked(x):
    return x * d2s.to_tensor(MASK)


def _biased(x):
    return x + d2s.to_tensor(BIAS)


def _through_helper(x):
    return _biased(x) * 2.0


def _shape_read(x):
    return x.reshape([MASK.shape[0]]) * float(MASK.sum())


class Anchored(nn.Layer):
    def __init__(self):
        super().__init__()
        self.anchors = np.array([[1.0, 2.0], [3.0, 4.0]], dtype="float32")
        self.tables = {"scale": np.array([2.0], dtype="float32")}
        self.steps = [np.array([0.5, 0.5], dtype="float32")]

    def forward(self, x):
        y = x * d2s.to_tensor(self.anchors) * d2s.to_tensor(self.tables["scale"])
        return y + d2s.to_tensor(self.steps[0])


def _x(n=4):
    return d2s.to_tensor(np.arange(1.0, n + 1.0, dtype="float32"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_global_array_written_between_calls(backend):
    static = d2s.jit.to_static(_masked, backend=_backend(backend))
    saved = MASK.copy()
    try:
        for change in [None, (1, 5.0), (0, -1.0), (1, 0.0)]:
            if change is not None:
                MASK[change[0]] = change[1]
            for _ in range(2):  # (the second call: the cached path)
                np.testing.assert_allclose(static(_x()).numpy(), _masked(_x()).numpy())
    finally:
        MASK[:] = saved


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_global_read_by_a_called_helper(backend):
    static = d2s.jit.to_static(_through_helper, backend=_backend(backend))
    try:
        for value in [0.0, 3.0, 3.0, -2.0]:
            BIAS[2] = value
            for _ in range(2):
                np.testing.assert_allclose(static(_x()).numpy(), _through_helper(_x()).numpy())
    finally:
        BIAS[:] = 0.0


def test_a_python_number_read_from_the_array_follows_it():
    static = d2s.jit.to_static(_shape_read)
    saved = MASK.copy()
    try:
        np.testing.assert_allclose(static(_x()).numpy(), _shape_read(_x()).numpy())
        np.multiply(MASK, 3.0, out=MASK)  # (in place: the same object)
        np.testing.assert_allclose(static(_x()).numpy(), _shape_read(_x()).numpy())
    finally:
        MASK[:] = saved


@pytest.mark.parametrize("backend", BACKENDS)
def test_layer_attribute_dict_and_list_arrays(backend):
    eager, model = Anchored(), Anchored()
    forward = d2s.jit.to_static(model.forward, backend=_backend(backend))
    x = d2s.to_tensor(np.ones((2, 2), dtype="float32"))

    def both(change):
        change(eager)
        change(model)
        for _ in range(2):
            np.testing.assert_allclose(forward(x).numpy(), eager(x).numpy())

    both(lambda m: None)
    both(lambda m: m.anchors.__setitem__((0, 1), 7.0))
    both(lambda m: np.multiply(m.tables["scale"], 3.0, out=m.tables["scale"]))
    both(lambda m: m.steps[0].__setitem__(1, -4.0))
    # back to what an earlier call held: the program kept for it serves again
    both(lambda m: m.anchors.__setitem__((0, 1), 2.0))


def test_a_shape_changed_in_place_is_a_new_value():
    static = d2s.jit.to_static(_masked)
    saved = MASK.copy()
    try:
        static(_x())
        MASK.shape = (2, 2)  # (the same bytes, another shape: broadcasting changes)
        x = d2s.to_tensor(np.ones((2, 2), dtype="float32"))
        np.testing.assert_allclose(static(x).numpy(), _masked(x).numpy())
    finally:
        MASK.shape = (4,)
        MASK[:] = saved


def test_a_large_array_is_said_once_by_name():
    def reads_big(x):
        return x + d2s.to_tensor(BIG[:4]) + float(BIG.size)

    static = d2s.jit.to_static(reads_big)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        static(_x())
        static(_x())
    said = [w for w in caught if "BIG" in str(w.message) and "in place" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in caught]
    assert "d2s.to_tensor" in str(said[0].message)


def _closing_over(table, scale):
    def f(x):
        return x * d2s.to_tensor(table) * scale

    def rescale(value):
        nonlocal scale
        scale = value
    return f, rescale


@pytest.mark.parametrize("backend", BACKENDS)
def test_closure_variables_rebound_or_written_into(backend):
    """A closure variable is state the caller keeps too: the enclosing
    function rebinds it (`nonlocal`) or writes into the array it holds."""
    table = np.arange(4, dtype="float32")
    f, rescale = _closing_over(table, 2.0)
    static = d2s.jit.to_static(f, backend=_backend(backend))
    for change in [lambda: None, lambda: table.__setitem__(0, 7.0), lambda: rescale(-3.0),
                   lambda: rescale(-3.0), lambda: table.__setitem__(0, 0.0)]:
        change()
        for _ in range(2):
            np.testing.assert_allclose(static(_x()).numpy(), f(_x()).numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_converted_training_step_reading_class_weights(backend):
    """A numpy class-weight array on the model, changed between steps of a
    converted whole training step: every step uses the weights now."""
    class Weighted(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
            self.class_weight = np.ones(2, dtype="float32")

        def forward(self, x):
            return (self.fc(x) * d2s.to_tensor(self.class_weight)).sum()

    def trainer(model):
        opt = d2s.optimizer.SGD(0.1, parameters=model.parameters())

        def step(x):
            loss = model(x)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return step

    eager, model = Weighted(), Weighted()
    model.set_state_dict(eager.state_dict())
    eager_step = trainer(eager)
    static_step = d2s.jit.to_static(trainer(model), backend=_backend(backend))
    x = d2s.to_tensor(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4))
    for weight in [1.0, 0.0, 0.0, 2.5]:
        eager.class_weight[0] = model.class_weight[0] = weight
        np.testing.assert_allclose(static_step(x).numpy(), eager_step(x).numpy(), rtol=1e-5)
    np.testing.assert_allclose(model.fc.weight.numpy(), eager.fc.weight.numpy(), rtol=1e-5)


def test_a_closure_variable_taking_many_values_is_said_by_name():
    f, rescale = _closing_over(np.ones(2, dtype="float32"), 1.0)
    static = d2s.jit.to_static(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for v in range(10):
            rescale(float(v))
            np.testing.assert_allclose(static(_x(2)).numpy(), f(_x(2)).numpy())
    said = [str(w.message) for w in caught if "took more than" in str(w.message)]
    assert len(said) == 1 and "closure variable(s) 'scale'" in said[0], said


class _Counting(nn.Layer):
    """Research code keeping a count in a numpy array, written in forward."""

    def __init__(self):
        super().__init__()
        self.counts = np.zeros(3, dtype="int64")

    def forward(self, x):
        self.counts[0] += 1
        return x * 2.0


def test_an_array_the_trace_writes_into_is_a_clear_error():
    """Eagerly the write happens on every call; a program would do it once,
    while traced: a clear error naming the array and the line, saying what to
    write instead, and the caller's array left as it was."""
    model = _Counting()
    forward = d2s.jit.to_static(model.forward)
    with pytest.raises(Exception, match=r"self\.counts \(read at .*line \d+: "
                                        r"`self\.counts\[0\] \+= 1`\).*register_buffer"):
        forward(_x())
    assert model.counts.tolist() == [0, 0, 0]
