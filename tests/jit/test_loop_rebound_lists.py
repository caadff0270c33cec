"""A Python list that a loop on a tensor rebinds to a new list each trip
(per-layer k/v caches returned by a decode step) is carried as a list of
values, item by item, like a tuple; a list the body appends to is still a
tensor array. Before, the rebound list was mistaken for an appended one and
the loop failed with "PendingArray before the loop body and a list after"."""
import numpy as np
import pytest

import d2s
from d2s.static import ControlFlowError


def _step(pairs):
    new = []
    for k, v in pairs:              # a Python list: unrolled while tracing
        new.append((k + v, v * 2.0))
    return new


def decode(a, b, n):
    pairs = _step([(a, b), (b, a)])
    i = d2s.zeros([], dtype="int64")
    while i < n:
        pairs = _step(pairs)
        i = i + 1
    return pairs[0][0] + pairs[1][1]


def rebound_comprehension(a, n):
    xs = [a, a * 2.0]
    while n > 0:
        xs = [x + 1.0 for x in xs]
        n = n - 1
    return xs[0] * xs[1]


@pytest.mark.parametrize("fn, args", [
    (decode, lambda: (d2s.to_tensor([1.0, 2.0]), d2s.to_tensor([0.5, -1.0]),
                      d2s.to_tensor(3))),
    (rebound_comprehension, lambda: (d2s.to_tensor([1.0, 3.0]), d2s.to_tensor(4))),
])
def test_rebound_list_is_carried_item_by_item(fn, args):
    eager = fn(*args()).numpy()
    static = d2s.jit.to_static(fn)
    np.testing.assert_array_equal(static(*args()).numpy(), eager)
    ops = [op.type for op in static.get_concrete_program(*args()).main_program.blocks[0].ops]
    assert ops.count("while") == 1


def test_rebound_to_another_length_is_still_an_error():
    def grow(a, n):
        xs = [a]
        while n > 0:
            xs = [xs[0], a]
            n = n - 1
        return xs[0]
    with pytest.raises(ControlFlowError, match="'xs'.*keep one structure"):
        d2s.jit.to_static(grow)(d2s.to_tensor([1.0]), d2s.to_tensor(2))


def test_appended_list_is_still_a_tensor_array():
    def collect(a, n):
        out = [a]
        i = d2s.zeros([], dtype="int64")
        while i < n:
            out.append(out[-1] * 2.0)
            i = i + 1
        return d2s.stack(out)
    args = (d2s.to_tensor([1.0, 2.0]), d2s.to_tensor(3))
    np.testing.assert_array_equal(d2s.jit.to_static(collect)(*args).numpy(),
                                  collect(*args).numpy())
