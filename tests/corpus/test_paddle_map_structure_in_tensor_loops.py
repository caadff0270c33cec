"""`paddle.utils.map_structure(fn, caches)` on a list of per-layer cache dicts
inside a loop on a tensor, as PaddlePaddle's transformer beam search merges
and splits its beam caches each step: the list carried into the loop is
mapped like the list it is (it raised "unsupported operand type(s) for *:
'PendingArray' and 'int'"). Eager vs converted, numpy and xla."""
import numpy as np
import pytest

import d2s as paddle
from d2s.jit import to_static

from harness import BACKENDS, close


def _grow(cache, x):
    cache["k"] = paddle.concat([cache["k"], x], axis=1)


def _decode(x, n):
    caches = [{"k": paddle.zeros([2, 0]), "v": paddle.zeros([2, 0])} for _ in range(2)]
    for i in range(n):
        caches = paddle.utils.map_structure(lambda t: t * 2.0, caches)
        for layer in range(2):
            _grow(caches[layer], x * (layer + 1))
        caches = paddle.utils.map_structure(lambda t: t - 1.0, caches)
    return caches[1]["k"], caches[0]["v"]


# The caches grow each step: XLA loops carry one shape, so on xla that program
# runs on numpy and says so.
@pytest.mark.filterwarnings("ignore:.*a loop variable changes shape in the loop")
@pytest.mark.parametrize("backend", BACKENDS)
def test_map_structure_over_caches_carried_by_a_tensor_loop(backend):
    static = to_static(_decode, backend=backend)
    for n in (1, 3):
        x, steps = paddle.ones([2, 1]), paddle.to_tensor(n)
        expected = _decode(x, steps)
        got = static(x, steps)
        assert expected[0].shape == (2, n)
        for g, e in zip(got, expected):
            close(g.numpy(), e.numpy(), backend, f"{n} steps")


def test_map_structure_keeps_plain_structures():
    tree = {"a": [1, 2], "b": (3, {"c": 4})}
    assert paddle.utils.map_structure(lambda v: v * 10, tree) == {"a": [10, 20], "b": (30, {"c": 40})}
