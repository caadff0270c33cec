"""`t.numpy()` and `t.item(...)` inside converted code, as PaddlePaddle's
dygraph-to-static tests write them (`if x.numpy()[0] > 0`, `while i <
n.numpy()[0]`, `paddle.to_tensor(a.numpy() + b.numpy())`, `x * s.item()`).

The value a static Variable does not have yet stands for itself: `.numpy()`
is the (detached) Variable, `.item()` a weak 0-d cast, so the code runs as
eagerly on the numpy and xla backends. Where real numpy is needed the error
stays clear.
"""
import os
import sys

import numpy as np
import pytest

import d2s
from d2s.jit import to_static

from harness import BACKENDS

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "jit"))
from model_code_helpers import assert_same_run, program_ops, tensor  # noqa: E402


def _mean_numpy_branch(x):
    if d2s.mean(x).numpy() > 0.5:
        x = x - 1
    else:
        x = x + 1
    return x


def _first_numpy_list(x):
    a = []
    if x.numpy()[0] > 0:
        a.append(x * 2)
    else:
        a.append(x * 0 + 9.0)
    return a[0]


def _numpy_loop_bounds(x, n):
    a = []
    i = 0
    while i < n.numpy()[0]:
        a.append(x + i)
        i += 1
    one = d2s.ones([1], "int32")
    for _ in range(one.numpy()[0]):
        last = a.pop()
    return d2s.stack(a, axis=1), last


class _Ops:
    @staticmethod
    def add(a, b):
        return d2s.to_tensor(a.numpy() + b.numpy())


def _numpy_through_a_helper(x):
    return _Ops().add(x, x) * x


def _scaled_by_item(x):
    s = x.sum().item()
    k = x.astype("int32")[0].item()
    return x * s + k, x * (x[1] > 0).item()


def _indexed_items(x):
    return x * x.item(4) + x.item(1, 2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("values", [[0.25, 2.0, -1.5], [-2.0, 0.5, 0.25]])
def test_numpy_of_a_traced_tensor_stands_for_its_value(backend, values):
    for fn in (_mean_numpy_branch, _first_numpy_list, _numpy_through_a_helper):
        static = to_static(fn, backend=backend)
        assert_same_run(static, fn, lambda: (tensor(values, grad=True),))
    assert "cond" in program_ops(to_static(_mean_numpy_branch), tensor(values))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [2, 4])
def test_numpy_as_a_loop_bound(backend, n):
    static = to_static(_numpy_loop_bounds, backend=backend)
    make = lambda: (tensor([1, 2, 3], dtype="int32"), d2s.full([1], n, "int32"))  # noqa: E731
    assert_same_run(static, _numpy_loop_bounds, make)
    assert "while" in program_ops(static, *make())


@pytest.mark.parametrize("backend", BACKENDS)
def test_item_is_a_weak_number_without_gradient(backend):
    static = to_static(_scaled_by_item, backend=backend)
    for values in ([1.5, 2.0, -0.5], [3.25, -1.0, 0.5]):
        out = assert_same_run(static, _scaled_by_item, lambda: (tensor(values, grad=True),))
        assert out[0].dtype == np.float32   # a Python number keeps x's dtype


@pytest.mark.parametrize("backend", BACKENDS)
def test_item_with_an_index(backend):
    static = to_static(_indexed_items, backend=backend)
    values = np.arange(6.0).reshape(2, 3) - 2.5
    assert_same_run(static, _indexed_items, lambda: (tensor(values, grad=True),))
    with pytest.raises(ValueError, match="takes 0, 1 or 2 indices"):
        to_static(lambda x: x.item(0, 1, 2))(tensor(values))
    with pytest.raises(ValueError, match="one-element"):
        to_static(lambda x: x * x.item())(tensor(values))


def _numpy_function_of_it(x):
    return x * float(np.max(x.numpy()))


def test_real_numpy_of_a_traced_tensor_is_a_clear_error():
    x = tensor([1.0, 2.0])
    assert _numpy_function_of_it(x) is not None   # eagerly fine
    with pytest.raises(TypeError, match="no value while its program is being built"):
        to_static(_numpy_function_of_it)(x)
