"""`paddle.assign(x, out)` (and `assign(x, output=out)`) where `out` is a
value the converted function computed, as ported PaddlePaddle code writes
into a tensor it made (`mask = paddle.zeros(...)`; `paddle.assign(m, mask)`):
the statement rebinds `out` to the copy, as in-place methods do, straight,
under a tensor `if` and in a tensor loop. Values (with `out`'s dtype) and
gradients as eagerly, numpy and xla; where nothing rebinds the name the
error says what to write."""
import os
import sys

import numpy as np
import pytest

import d2s as paddle
from d2s.jit import to_static

from harness import BACKENDS

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "jit"))
from model_code_helpers import assert_same_run, tensor  # noqa: E402


def _assign_into_locals(x, n):
    buf = paddle.zeros([2, 3])
    paddle.assign(x * 2.0, buf)
    counts = paddle.zeros([2, 3], dtype="int64")
    if x.mean() > 0:
        paddle.assign(x * 3.0, output=counts)     # takes counts' dtype: truncated
    acc = paddle.zeros([2, 3])
    for i in range(n):
        paddle.assign(acc + x * i, acc)
    return buf + acc, counts


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_assign_into_a_value_of_the_program(backend, sign):
    static = to_static(_assign_into_locals, backend=backend)
    values = sign * (np.arange(6, dtype="float32").reshape(2, 3) / 4.0 + 0.5)
    out = assert_same_run(static, _assign_into_locals,
                          lambda: (tensor(values, grad=True), paddle.to_tensor(3)))
    assert out[1].dtype == np.int64


def _helper(src, dst):
    paddle.assign(src, dst)      # a callee writing into its caller's value: the caller sees it
    return None


def _through_a_helper(x):
    y = paddle.zeros([2])
    _helper(x, y)
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_assign_by_a_callee_into_its_callers_value_is_seen_by_the_caller(backend):
    """Nothing rebinds `dst` in the caller: the trace writes the value in
    place (every holder reads it), as eagerly the caller's Tensor changes."""
    static = to_static(_through_a_helper, backend=backend)
    for values in ([1.0, 2.0], [-3.0, 0.5]):
        x = tensor(values, grad=True)
        out = static(x)
        np.testing.assert_array_equal(out.numpy(), _through_a_helper(tensor(values)).numpy())
        out.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_eager_assign_from_the_output_itself_keeps_the_old_values_gradient():
    # each assign's value reads acc before the write: d(acc)/dx = 0 + 1 + 2
    x = tensor([1.0, 2.0], grad=True)
    acc = paddle.zeros([2])
    for i in range(3):
        paddle.assign(acc + x * i, acc)
    acc.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def _scale_input(x):
    x.scale_(2.0)
    return x + 1.0


def _assign_input(x):
    paddle.assign(x * 3.0, x)
    return x


@pytest.mark.parametrize("fn", [_scale_input, _assign_input])
def test_an_in_place_write_to_an_input_changes_the_callers_tensor_as_eagerly(fn):
    x = tensor([1.0, 2.0])
    want = fn(x)
    assert x.numpy().tolist() != [1.0, 2.0]   # eagerly the caller's tensor changes
    y = tensor([1.0, 2.0])
    got = to_static(fn)(y)
    assert y.numpy().tolist() == x.numpy().tolist()
    assert got.numpy().tolist() == want.numpy().tolist()
