"""Writes a converted function makes into containers the caller passed as
arguments go to each call's own containers (resolved by their place under
the arguments), not to the containers of the call the program was traced
for: one program serves every list or dict the caller passes."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def _set_item(x, ys):
    ys[0] = ys[0] + x
    return ys[0] * 1.0


def _set_key(x, cache):
    cache["k"] = cache["k"] + x
    cache["steps"].append(x * 2.0)
    return cache["k"].sum()


class _Box:
    pass


def _set_attribute(x, box):
    box.total = box.total + x
    return box.total * 1.0


def _t(values):
    return d2s.to_tensor(np.array(values, "float32"))


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_list_item_written_in_each_calls_list(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(_set_item, backend=backend)
    lists = [[_t([10.0, 20.0])] for _ in range(3)]
    eager = [[_t([10.0, 20.0])] for _ in range(3)]
    for i, (mine, ref) in enumerate(zip(lists, eager)):
        x = _t([1.0 + i, -2.0 * i])
        np.testing.assert_allclose(static(x, mine).numpy(), _set_item(x, ref).numpy())
    for mine, ref in zip(lists, eager):
        assert isinstance(mine[0], d2s.Tensor)
        np.testing.assert_allclose(mine[0].numpy(), ref[0].numpy())
    assert len(static.program_cache) == 1


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_dict_entries_and_appends_in_each_calls_dict(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(_set_key, backend=backend)
    caches = [{"k": _t([1.0, 2.0]), "steps": []} for _ in range(2)]
    refs = [{"k": _t([1.0, 2.0]), "steps": []} for _ in range(2)]
    for rnd in range(2):
        for i in range(2):
            x = _t([float(i + rnd), 1.0])
            np.testing.assert_allclose(static(x, caches[i]).numpy(),
                                       _set_key(x, refs[i]).numpy())
    for mine, ref in zip(caches, refs):
        np.testing.assert_allclose(mine["k"].numpy(), ref["k"].numpy())
        assert len(mine["steps"]) == len(ref["steps"]) == 2
        for a, b in zip(mine["steps"], ref["steps"]):
            np.testing.assert_allclose(a.numpy(), b.numpy())


def test_attribute_of_an_argument_object_in_each_calls_object():
    static = to_static(_set_attribute)
    boxes, refs = [_Box(), _Box()], [_Box(), _Box()]
    for b in boxes + refs:
        b.total = _t([0.5, 0.5])
    for i in range(2):
        x = _t([1.0, float(i)])
        static(x, boxes[i])
        _set_attribute(x, refs[i])
    for mine, ref in zip(boxes, refs):
        np.testing.assert_allclose(mine.total.numpy(), ref.total.numpy())


def _grow(x, history):
    history.append(x * 3.0)
    return x + float(len(history))     # reads the length: a guard on it


def test_a_length_read_is_guarded_on_each_calls_list():
    static = to_static(_grow)
    a, b = [], [_t([0.0])] * 2
    ra, rb = [], [_t([0.0])] * 2
    for mine, ref in ((a, ra), (b, rb), (a, ra), (b, rb)):
        x = _t([1.0])
        np.testing.assert_allclose(static(x, mine).numpy(), _grow(x, ref).numpy())
    assert [len(a), len(b)] == [len(ra), len(rb)] == [2, 4]
