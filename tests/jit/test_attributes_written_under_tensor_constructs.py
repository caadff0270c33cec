"""A Layer attribute (or an attribute of an object of the call) a tensor `if`
or loop writes (`self.count += 1`, `self.last = h`) is carried inside the
trace, and after each run the write is replayed with the run's value
(d2s.jit.outliving): the layer never keeps a build-time Variable, and a
failed trace puts the old value back.

Each case runs eagerly and under `to_static` on the same inputs: tensor
values build the static construct, Python values keep plain Python semantics.
"""

import numpy as np
import pytest

import d2s.nn as nn
from d2s.jit import to_static

from model_code_helpers import assert_same, assert_same_run, program_ops, tensor


class _Counts(nn.Layer):
    def __init__(self):
        super().__init__()
        self.count = 0

    def forward(self, x, gate=None):
        if (x.sum() if gate is None else gate) > 0:
            self.count += 1
        return x * 2.0


class _KeepsLast(nn.Layer):
    def __init__(self):
        super().__init__()
        self.last = tensor([0.0])

    def forward(self, x):
        if x.sum() > 0:
            self.last = x * 2.0
        else:
            self.last = x * 3.0
        return self.last + 1.0


class _KeepsLastOfLoop(nn.Layer):
    def __init__(self):
        super().__init__()
        self.state = tensor([0.0])

    def forward(self, x):
        i = 0
        while x.sum() > i:
            self.state = self.state + x
            i += 1
        return x


@pytest.mark.parametrize("make, name", [
    (_Counts, "count"), (_KeepsLast, "last"), (_KeepsLastOfLoop, "state")])
@pytest.mark.parametrize("value", [1.0, -1.0])
def test_a_layer_attribute_a_tensor_construct_wrote_is_no_build_time_variable_after_the_call(
        make, name, value):
    # The layer kept the build-time Variable (cond_5: int64[]): eager code
    # after the call (`layer.count + 1` built another Variable), and the
    # next call of the same program, read it instead of the path taken. The
    # write is now replayed after each run (issue 25, jit.outliving): the
    # attribute holds what the eager call leaves, call after call.
    layer, eager = make(), make()
    static = to_static(layer)
    for _ in range(3):
        assert_same(static(tensor([value])), eager(tensor([value])))
        got, want = getattr(layer, name), getattr(eager, name)
        np.testing.assert_array_equal(np.asarray(got.numpy() if hasattr(got, "numpy") else got),
                                      np.asarray(want.numpy() if hasattr(want, "numpy")
                                                 else want))
        assert type(got + 1) is type(want + 1) or hasattr(got, "numpy")


def test_a_failed_trace_leaves_the_layer_attribute_as_it_was():
    class _FailsAfterTheIf(_KeepsLast):
        def forward(self, x):
            super().forward(x)
            raise RuntimeError("after the write")
    layer = _FailsAfterTheIf()
    before = layer.last
    with pytest.raises(RuntimeError, match="after the write"):
        to_static(layer)(tensor([1.0]))
    assert layer.last is before


class _Scratch:
    """A user object (not a layer) the call writes and reads: no error."""


def _writes_scratch(x):
    scratch = _Scratch()
    if x.sum() > 0:
        scratch.h = x * 2.0
    else:
        scratch.h = -x
    return scratch.h + 1.0


def test_an_object_of_the_call_written_under_a_tensor_if_is_carried():
    static = to_static(_writes_scratch)
    for value in (1.0, -1.0):
        assert_same_run(static, _writes_scratch, lambda: (tensor([value, 2.0], grad=True),))
    assert "cond" in program_ops(static, tensor([1.0, 2.0]))


@pytest.mark.parametrize("value", [1.0, -1.0])
def test_a_layer_attribute_written_on_a_python_condition_keeps_python_semantics(value):
    # (once: a Python side effect happens once per trace, DESIGN §4)
    layer, eager = _Counts(), _Counts()
    assert_same(to_static(layer)(tensor([1.0]), value), eager(tensor([1.0]), value))
    assert layer.count == eager.count == (1 if value > 0 else 0)
