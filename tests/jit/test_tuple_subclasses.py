"""A namedtuple, or any `tuple` subclass, returned or built by converted code
comes back as the same type (issue 25 item 4), on the numpy and xla
backends, with the values and gradients of the eager run."""
import collections

import numpy as np
import pytest

import d2s
from d2s.jit import to_static

from model_code_helpers import assert_same_run, tensor

Pair = collections.namedtuple("Pair", "low high")


class Row(tuple):
    """A tuple subclass built from one iterable, as `tuple` is."""

    def total(self):
        return self[0] + self[1]


def _returned(x):
    return Pair(x - 1, x * 2)


def _through_if(x):
    if x.sum() > 0:
        out = Pair(x, x * 3)
    else:
        out = Pair(-x, x)
    return out


def _through_loop(x, n):
    acc = Pair(x, x * 0)
    for _ in range(n):
        acc = Pair(acc.low * 0.5, acc.high + acc.low)
    return acc, Row([acc.low, acc.high])


def _nested(x):
    if x.mean() > 0:
        return {"pair": Pair(x, x + 1), "row": Row((x, x * 2))}
    return {"pair": Pair(x * 2, x), "row": Row((x - 1, x))}


CASES = [
    (_returned, lambda: (tensor([1.0, -2.0], grad=True),)),
    (_through_if, lambda: (tensor([1.0, 2.0], grad=True),)),
    (_through_if, lambda: (tensor([-1.0, -2.0], grad=True),)),
    (_through_loop, lambda: (tensor([1.0, 3.0], grad=True), d2s.to_tensor(np.array(3)))),
    (_nested, lambda: (tensor([1.0, 2.0], grad=True),)),
]


def _types(value):
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return (type(value), [_types(v) for v in value])
    return None


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn,make", CASES)
def test_tuple_subclasses_come_back_as_their_type(backend, fn, make):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(fn, backend=backend)
    out = assert_same_run(static, fn, make)
    assert _types(out) == _types(fn(*make()))
    if isinstance(out, Pair):
        assert out.low is out[0]
    if fn is _through_loop:
        assert isinstance(out[1], Row)
        np.testing.assert_allclose(out[1].total().numpy(), fn(*make())[1].total().numpy())
