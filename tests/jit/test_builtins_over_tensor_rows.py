"""`max` / `min` / `sum` / `reversed` / `for` over a list appended in a tensor
loop (and over a static Variable) walk its rows as eagerly: `max(outs)` is
the first largest row, not the whole array; `sum` keeps an int dtype; rows
of many elements raise `bool()`'s error (`_jst.convert_sum`,
`_jst.convert_reversed`).

Each case runs eagerly and under `to_static` on the same inputs: tensor
values build the static construct, Python values keep plain Python semantics.
"""

import numpy as np
import pytest

import d2s
from d2s.jit import to_static

from model_code_helpers import assert_same_run, program_ops, tensor


def _collected(x):
    outs = []
    i = 0
    while x.sum() > i:
        outs.append(x * (i + 1.0) - 2.5)
        i += 1
    return outs


def _sum_of_collected(x):
    return sum(_collected(x))


def _sum_of_collected_with_start(x):
    outs = _collected(x)
    return sum(outs, x * 3.0)


def _max_and_min_of_collected(x):
    outs = []
    i = 0
    while x.sum() > i:
        outs.append((x * (i - 1.0)) ** 2)
        i += 1
    return max(outs), min(outs), x * len(outs)


def _for_over_collected(x):
    outs = _collected(x)
    acc = x * 0.0
    for o in outs:
        acc = acc * 0.5 + o
    return acc


def _int_rows(x):
    outs = []
    i = 0
    while x.sum() > i:
        outs.append(d2s.cast(x, "int32") + i)
        i += 1
    return sum(outs)


@pytest.mark.parametrize("fn", [_sum_of_collected, _sum_of_collected_with_start,
                                _max_and_min_of_collected])
@pytest.mark.parametrize("n", [1.0, 3.0])
def test_builtins_over_a_list_appended_in_a_tensor_loop(fn, n):
    # sum: a TypeError (the tensor array iterated at build time); max/min:
    # the whole array (every row) where eagerly the largest row.
    static = to_static(fn)
    assert_same_run(static, fn, lambda: (tensor([n], grad=True),))
    assert "while" in program_ops(static, tensor([n]))


def _reversed_for_over_collected(x):
    outs = _collected(x)
    acc = x * 0.0
    for o in reversed(outs):
        acc = acc * 0.5 + o
    return acc


@pytest.mark.parametrize("fn", [_for_over_collected, _reversed_for_over_collected])
@pytest.mark.parametrize("n", [1.0, 3.0])
def test_a_for_loop_over_a_list_appended_in_a_tensor_loop(fn, n):
    # reversed(outs): a TypeError (its length asked while the program is built)
    static = to_static(fn)
    assert_same_run(static, fn, lambda: (tensor([n], grad=True),))
    assert "while" in program_ops(static, tensor([n]))


def test_sum_of_int_rows_keeps_their_dtype():
    static = to_static(_int_rows)
    out = assert_same_run(static, _int_rows, lambda: (tensor([3.0]),))
    assert out.dtype == np.int32


def _max_of_a_tensor(x):
    return max(x), min(x * -1.0), sum(x)


def test_max_min_sum_of_a_tensor_fold_its_rows():
    # max(v) of a static Variable returned v itself (all rows).
    static = to_static(_max_of_a_tensor)
    assert_same_run(static, _max_of_a_tensor, lambda: (tensor([1.0, 3.0, 2.0, 3.0], grad=True),))


def _builtins_over_a_python_loop(x, n):
    outs = []
    i = 0
    while i < n:                      # a Python condition: a Python list
        outs.append((x * (i - 1.0)) ** 2)
        i += 1
    acc = x * 0.0
    for o in reversed(outs):
        acc = acc * 0.5 + o
    return max(outs), min(outs), sum(outs), acc


@pytest.mark.parametrize("n", [1, 3])
def test_builtins_over_a_python_list_keep_python_semantics(n):
    # the list is Python's: max/min compare tensors with bool(), no loop op built
    static = to_static(_builtins_over_a_python_loop)
    assert_same_run(static, _builtins_over_a_python_loop, lambda: (tensor([2.0], grad=True), n))
    assert "while" not in program_ops(static, tensor([2.0]), n)


def _max_of_wide_rows(x):
    outs = []
    i = 0
    while x.sum() > i:
        outs.append(x)
        i += 1
    return max(outs)


def test_max_of_rows_of_many_elements_is_bools_error():
    with pytest.raises(ValueError, match=r"max\(\).*ambiguous"):
        to_static(_max_of_wide_rows)(tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="ambiguous"):
        _max_of_wide_rows(tensor([1.0, 2.0]))
