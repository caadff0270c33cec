"""`paddle.tensor.fill_constant(shape, dtype, value)`, the older name of
`full` that PaddlePaddle's dygraph-to-static models still call (seq2seq,
transformer, list tests), also with a loop counter as the value inside a
loop on a tensor. Eager and converted agree on numpy and xla."""
import numpy as np
import pytest

import d2s as paddle

from harness import BACKENDS, as_numpy, close_tree


def _positions(word, n):
    total = paddle.tensor.fill_constant(shape=[1], dtype="int64", value=0)
    for i in range(n):
        pos = paddle.tensor.fill_constant(shape=word.shape, dtype="int64", value=i)
        total = total + (word * pos).sum()
    start = paddle.tensor.fill_constant([2, 2], "float32", 1.5)
    return total, start


@pytest.mark.parametrize("backend", BACKENDS)
def test_fill_constant_as_eagerly(backend):
    static = paddle.jit.to_static(_positions, backend=backend)
    word = paddle.to_tensor(np.array([[1], [2]]))
    for n in (1, 3):
        steps = paddle.to_tensor(n)
        expected = as_numpy(_positions(word, steps))
        assert expected[0].tolist() == [3 * sum(range(n))]
        close_tree(as_numpy(static(word, steps)), expected, backend, f"{n} steps")


def test_fill_constant_into_out():
    out = paddle.zeros([2])
    assert paddle.tensor.fill_constant([2], "float32", 7.0, out=out) is out
    np.testing.assert_array_equal(out.numpy(), [7.0, 7.0])
