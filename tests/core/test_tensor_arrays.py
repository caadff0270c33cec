"""`d2s.tensor.create_array` / `array_write` / `array_read` / `array_length`
(Paddle's tensor arrays as dynamic mode has them: lists), eagerly and in a
converted function whose loop is unrolled; an index known only at run time
is a clear error naming what to write instead."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def test_write_read_length_eager():
    arr = d2s.tensor.create_array("float32")
    assert arr == []
    i = d2s.zeros([1], "int64")
    for k in range(3):
        d2s.tensor.array_write(d2s.full([2], float(k)), i, array=arr)
        i = i + 1
    assert d2s.tensor.array_length(arr).numpy().tolist() == [3]
    d2s.tensor.array_write(d2s.full([2], 9.0), 1, array=arr)  # overwrite
    np.testing.assert_array_equal(d2s.tensor.array_read(arr, d2s.to_tensor([1])).numpy(),
                                  [9.0, 9.0])
    np.testing.assert_array_equal(d2s.stack(arr).numpy()[:, 0], [0.0, 9.0, 2.0])
    new = d2s.tensor.array_write(d2s.ones([1]), 0)
    assert len(new) == 1
    with pytest.raises(IndexError, match="outside"):
        d2s.tensor.array_write(d2s.ones([2]), 5, array=arr)
    with pytest.raises(TypeError, match="float64"):
        d2s.tensor.create_array("float32", [d2s.to_tensor(np.ones(2))])


def test_converted_unrolled_loop_and_the_run_time_index_error():
    @to_static
    def f(x):
        arr = d2s.tensor.create_array("float32")
        for k in range(3):  # a Python loop: unrolled
            d2s.tensor.array_write(x * float(k), k, array=arr)
        return d2s.stack(arr).sum(0)
    x = d2s.to_tensor(np.array([1.0, 2.0], np.float32))
    np.testing.assert_allclose(f(x).numpy(), [3.0, 6.0])

    @to_static
    def g(x):
        arr = d2s.tensor.create_array("float32")
        i = d2s.zeros([1], "int64")
        while i < 3:
            d2s.tensor.array_write(x, i, array=arr)
            i = i + 1
        return x
    with pytest.raises(NotImplementedError, match="append"):
        g(x)
