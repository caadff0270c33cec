"""`d2s.full(shape, t)` with a tensor fill value and `d2s.to_tensor(t)` of a
traced tensor in converted code (issue 25 item 4), compared with the eager
run on the numpy and xla backends."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static

from model_code_helpers import assert_same_run, tensor


def _filled(x):
    scale = d2s.full([2, 3], x.max())
    ints = d2s.full([2], x.sum(), dtype="int64")
    return scale * x.mean(), ints


def _filled_dynamic(x):
    return d2s.full([x.shape[0], 2], x[0]) + x.sum()


def _copied(x):
    y = d2s.to_tensor(x * 2)            # a copy: no gradient to x through it
    z = d2s.to_tensor(x.sum(), dtype="int64")
    both = d2s.to_tensor([x[0], x[1]])
    return x * y + z, both


CASES = [
    (_filled, lambda: (tensor([1.5, -2.0, 0.5], grad=True),)),
    (_filled_dynamic, lambda: (tensor([3.0, 1.0, 2.0], grad=True),)),
    (_copied, lambda: (tensor([1.25, 2.5], grad=True),)),
]


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn,make", CASES)
def test_tensor_values_as_eagerly(backend, fn, make):
    if backend == "xla":
        pytest.importorskip("jax")
    assert_same_run(to_static(fn, backend=backend), fn, make)


def test_a_fill_of_many_elements_is_a_clear_error():
    def f(x):
        return d2s.full([2], x)
    with pytest.raises(ValueError, match="one-element"):
        to_static(f)(tensor([1.0, 2.0]))
