"""Lists appended to while a tensor `if` or loop is traced.

A list the converted function creates (or one created inside the traced
construct) becomes a program array, so appends follow the path the run
takes. Any other list (the caller's, one reached through `self` or a dict,
one another name holds, one a helper appends to, one from a call) may be
seen from outside the program, where a program value cannot go: changing it
under a tensor construct is a `ControlFlowError` naming the list, the file
and the line. A tuple, string, dict or None appended under a tensor `if`
has no program value either: the same error. On Python conditions all of
these keep Python's semantics.

Each case runs eagerly and under `to_static` on the same inputs: tensor
values build the static construct, Python values keep plain Python semantics.
"""

import re

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import assert_same, assert_same_run, program_ops, tensor


def _add(cache, x):
    cache.append(x)


def _add_each(cache, xs):
    for x in xs:
        cache.append(x)


def _add_if_positive(cache, h):
    if h.sum() > 0:
        cache.append(h)


def _helper_under_tensor_if(x, gate):
    outs = [x]
    if gate > 0:
        _add(outs, x)          # x is from before the `if`: no escape check sees it
    return d2s.stack(outs)


def _helper_in_tensor_while(x, gate):
    outs = [x]
    i = 0
    while gate > i:
        _add(outs, x)
        i += 1
    return d2s.stack(outs)


def _helper_loop_under_tensor_if(x, gate):
    outs = [x]
    if gate > 0:
        _add_each(outs, [x, x])
    return d2s.stack(outs)


def _helper_with_its_own_tensor_if(x, gate):
    outs = [x]
    _add_if_positive(outs, x * gate)
    return d2s.stack(outs)


def _closure_under_tensor_if(x, gate):
    outs = [x]

    def keep(h):
        outs.append(h)
    if gate > 0:
        keep(x)
    return d2s.stack(outs)


def _extend_helper(cache, x):
    cache += [x]


def _plus_equals_helper_under_tensor_if(x, gate):
    outs = [x]
    if gate > 0:
        _extend_helper(outs, x)
    return d2s.stack(outs)


class _CachingLayer(nn.Layer):
    def __init__(self, alias):
        super().__init__()
        self.cache = []
        self.alias = alias

    def forward(self, x):
        if self.alias:
            cache = self.cache
            if x.sum() > 0:
                cache.append(x)
        elif x.sum() > 0:
            _add(self.cache, x)
        return x + len(self.cache)


_OUTER_LIST_CASES = [
    (_helper_under_tensor_if, "cache", "cache.append(x)"),
    (_helper_in_tensor_while, "cache", "cache.append(x)"),
    (_helper_loop_under_tensor_if, "cache", "cache.append(x)"),
    (_helper_with_its_own_tensor_if, "cache", "cache.append(h)"),
    (_closure_under_tensor_if, "outs", "outs.append(h)"),
    (_plus_equals_helper_under_tensor_if, "cache", "cache += [x]"),
]


@pytest.mark.parametrize("fn, name, line", _OUTER_LIST_CASES)
@pytest.mark.parametrize("value", [1.0, -1.0])
def test_a_list_a_helper_appends_to_under_a_tensor_construct_is_an_error_naming_it(
        fn, name, line, value):
    # Eagerly the append happens only on the path taken (or once per trip);
    # the program traced it once for all of them: it showed on every path.
    method = "extend" if "+=" in line else "append"
    x = tensor([value, 2 * value])
    with pytest.raises(ControlFlowError,
                       match=rf"(?s)'{name}\.{method}\(\.\.\.\)' inside an `if` or a loop on a "
                             rf"tensor \(.*test_list_appends_under_tensor_constructs\.py, line \d+\).*"
                             rf"'{name}' was not created inside it.*{re.escape(line)}"):
        to_static(fn)(x, x.sum())


@pytest.mark.parametrize("fn", [case[0] for case in _OUTER_LIST_CASES
                                if case[0] is not _helper_with_its_own_tensor_if])
@pytest.mark.parametrize("gate", [2.0, -1.0])
def test_helpers_appending_to_a_callers_list_keep_python_semantics(fn, gate):
    # A Python condition: nothing is traced, the caller's list changes in place.
    static = to_static(fn)
    out = assert_same_run(static, fn, lambda: (tensor([1.0, 2.0], grad=True), gate))
    assert out.shape[0] > 1 if gate > 0 else out.shape[0] == 1
    assert "cond" not in program_ops(static, tensor([1.0, 2.0]), gate)


@pytest.mark.parametrize("alias", [False, True])
@pytest.mark.parametrize("value", [1.0, -1.0])
def test_a_layers_cache_appended_under_a_tensor_if_is_an_error(alias, value):
    layer = _CachingLayer(alias)
    with pytest.raises(ControlFlowError, match=r"(?s)'cache\.append\(\.\.\.\)'.*"
                                               r"test_list_appends_under_tensor_constructs\.py, line \d+"):
        to_static(layer)(tensor([value]))
    assert layer.cache == []   # never changed in place
    eager = _CachingLayer(alias)
    eager(tensor([value]))
    assert len(eager.cache) == (1 if value > 0 else 0)   # what the program could not show


class _Memory:
    """A user object with its own `append` (not a list): converted when called."""

    def __init__(self):
        self.last = None

    def append(self, x):
        if x.sum() > 0:
            self.last = x * 2.0
        else:
            self.last = -x


def _put(memory, x):
    memory.append(x)       # a parameter's `append`: checked, then converted as a call
    return memory.last


@pytest.mark.parametrize("value", [1.0, -1.0])
def test_a_parameters_own_append_method_is_converted_as_a_call(value):
    static = to_static(_put)
    assert_same_run(static, _put, lambda: (_Memory(), tensor([value, 2.0], grad=True)))
    assert "cond" in program_ops(static, _Memory(), tensor([value, 2.0]))


def _fresh(x, n):
    made = []
    for i in range(n):
        made.append(x * (i + 1))
    return made


def _own_list(x):
    made = []
    made.append(x)
    made += [x * 2]
    made.extend([x * 3])
    return d2s.stack(made)


def _helpers_with_their_own_lists(x):
    if x.sum() > 0:
        y = _own_list(x)
    else:
        y = d2s.stack(_fresh(-x, 3))
    i = 0
    while i < 3 and x.sum() < 10:
        y = y + _own_list(x).sum(axis=0)
        x = x + 1.0
        i += 1
    return y


@pytest.mark.parametrize("value", [1.0, -1.0])
def test_helpers_appending_to_lists_they_create_keep_working(value):
    static = to_static(_helpers_with_their_own_lists)
    assert_same_run(static, _helpers_with_their_own_lists,
                    lambda: (tensor([value, 0.5 * value], grad=True),))
    assert {"cond", "while"} <= program_ops(static, tensor([value, 0.5 * value]))


def _caller_list_from_a_fresh_helper(x):
    outs = _fresh(x, 2)       # a call's result: it may be kept elsewhere
    while x.sum() < 4.0:
        outs.append(x)
        x = x + 1.0
    return d2s.stack(outs)


def test_a_list_from_a_call_appended_in_a_tensor_loop_is_an_error():
    with pytest.raises(ControlFlowError,
                       match=r"(?s)'outs\.append\(\.\.\.\)'.*test_list_appends_under_tensor_constructs\.py"):
        to_static(_caller_list_from_a_fresh_helper)(tensor([1.0]))


def _add_parts(parts, x):
    parts.append(x * 2.0)
    parts.append(x + 1.0)


def _parts_made_in_the_loop_body(x, n):
    # (the coordinator's repro) each trip's own list: appending while tracing is right
    i = d2s.zeros([], "int64")
    acc = x
    while i < n:
        parts = []
        _add_parts(parts, acc)
        acc = d2s.stack(parts).sum(0)
        i = i + 1
    return acc


def _built(x):
    made = [x]
    _add_parts(made, x)
    return made


def _parts_made_by_a_helper_in_a_branch(x):
    if x.sum() > 0:
        parts = _built(x)        # a call's list, created inside the branch
        parts.append(x * 3.0)
        y = d2s.stack(parts).sum(0)
    else:
        y = d2s.stack(_built(-x)).sum(0)
    return y


def _parts_made_before_an_inner_tensor_if(x, n):
    i = d2s.zeros([], "int64")
    acc = x
    while i < n:
        parts = [acc]            # made in this trip, but before the `if`
        if acc.sum() > 4.0:
            _add_parts(parts, acc)
        acc = d2s.stack(parts).sum(0)
        i = i + 1
    return acc


@pytest.mark.parametrize("fn, make_args, op", [
    (_parts_made_in_the_loop_body, lambda v: (tensor([v, 1.0], grad=True),
                                              tensor(3, dtype=np.int64)), "while"),
    (_parts_made_by_a_helper_in_a_branch, lambda v: (tensor([v, 1.0], grad=True),), "cond"),
])
@pytest.mark.parametrize("value", [1.0, -3.0])
def test_a_list_created_inside_the_traced_construct_may_be_appended_by_helpers(
        fn, make_args, op, value):
    static = to_static(fn)
    assert_same_run(static, fn, lambda: make_args(value))
    assert op in program_ops(static, *make_args(value))


def test_a_list_created_in_a_trip_before_an_inner_tensor_if_is_an_error():
    # created while the loop is traced, but before the `if` whose branch
    # appends: the append would show on both paths of that `if`
    with pytest.raises(ControlFlowError,
                       match=r"(?s)'parts\.append\(\.\.\.\)' inside an `if` or a loop on a "
                             r"tensor \(.*test_list_appends_under_tensor_constructs\.py, line \d+\)"):
        to_static(_parts_made_before_an_inner_tensor_if)(tensor([1.0, 1.0]),
                                                         tensor(3, dtype=np.int64))


class _Decoder:
    def __init__(self):
        self.cache = []


def _cache_under_tensor_if(x, decoder):
    h = x * 2.0
    if x.sum() > 0:
        decoder.cache.append(h)
    return x + 1.0


def _dict_list_under_tensor_loop(x, state):
    h = x * 2.0
    while x.sum() < 4.0:
        state["seen"].append(h)
        x = x + 1.0
    return x


def _cache_under_python_if(x, decoder, keep):
    h = x * 2.0
    if keep:
        decoder.cache.extend([h])
    return x + 1.0


@pytest.mark.parametrize("value", [1.0, -1.0])
def test_attribute_list_append_under_a_tensor_if_is_an_error_naming_it(value):
    # eagerly the append happens only when x.sum() > 0; the program traced
    # both branches and the append showed on both (len 1 for value -1.0)
    decoder = _Decoder()
    with pytest.raises(ControlFlowError,
                       match=r"(?s)'decoder\.cache\.append\(\.\.\.\)' inside an `if` or a loop "
                             r"on a tensor.*test_list_appends_under_tensor_constructs\.py.*line \d+.*decoder\.cache"
                             r"\.append\(h\)"):
        to_static(_cache_under_tensor_if)(tensor([value]), decoder)
    assert decoder.cache == []  # never changed in place


def test_dict_list_append_under_a_tensor_loop_is_an_error_naming_it():
    state = {"seen": []}
    with pytest.raises(ControlFlowError,
                       match=r"(?s)'state\['seen'\]\.append\(\.\.\.\)'.*"
                             r"test_list_appends_under_tensor_constructs\.py"):
        to_static(_dict_list_under_tensor_loop)(tensor([1.0]), state)
    assert state["seen"] == []
    eager = {"seen": []}
    _dict_list_under_tensor_loop(tensor([1.0]), eager)
    assert len(eager["seen"]) == 3  # what the program could not have shown


@pytest.mark.parametrize("keep", [True, False])
def test_attribute_list_extend_under_a_python_if_stays_python(keep):
    static_decoder, eager_decoder = _Decoder(), _Decoder()
    static = to_static(_cache_under_python_if)(tensor([1.0]), static_decoder, keep)
    eager = _cache_under_python_if(tensor([1.0]), eager_decoder, keep)
    assert_same(static, eager)
    assert len(static_decoder.cache) == len(eager_decoder.cache) == (1 if keep else 0)


def _alias_then_tensor_if(x):
    outs = []
    seen = outs
    h = x * 2.0
    if x.sum() > 0:
        outs.append(h)
    return len(seen)


def _alias_then_tensor_loop(x):
    steps = [x]
    history = steps
    while x.sum() < 3.0:
        x = x + 1.0
        steps.append(x)
    return len(history)


def _no_alias_tensor_if(x):
    outs = [x]
    h = x * 2.0
    if x.sum() > 0:
        outs.append(h)
    return d2s.stack(outs)


@pytest.mark.parametrize("fn, construct", [(_alias_then_tensor_if, "an `if` on a tensor"),
                                           (_alias_then_tensor_loop, "a loop on a tensor")])
@pytest.mark.parametrize("value", [1.0, -1.0])
def test_append_to_a_list_another_name_holds_is_an_error_naming_both(fn, construct, value):
    # before: len(seen) was the same on both paths (eager: 1 or 0), len(history) 1
    with pytest.raises(ControlFlowError, match=rf"(?s)the list '(outs|steps)' is appended to in "
                                               rf"{construct}.*test_list_appends_under_tensor_constructs\.py.*"
                                               rf"'(seen|history)' names the same list"):
        to_static(fn)(tensor([value]))


@pytest.mark.parametrize("value", [1.0, -1.0])
def test_append_under_a_tensor_if_without_an_alias_is_still_an_array(value):
    # (the rule above does not catch the plain case lists.sharing makes right)
    static = assert_same_run(to_static(_no_alias_tensor_if), _no_alias_tensor_if,
                             lambda: (tensor([value]),))
    assert static.shape[0] == (2 if value > 0 else 1)
    assert "cond" in program_ops(to_static(_no_alias_tensor_if), tensor([value]))


def _tuple_under_tensor_if(x):
    outs = []
    if x.sum() > 0:
        outs.append((x, x * 2.0))
    return x * len(outs)


def _string_under_tensor_if(x):
    names = []
    if x.sum() > 0:
        names.append("positive")
    return x * len(names)


def _none_under_tensor_if(x):
    outs = [x]
    if x.sum() > 0:
        outs.append(None)
    return x * len(outs)


def _pairs_in_tensor_loop(x):
    outs = []
    i = 0
    while x.sum() > i:
        outs.append((x, x * 2.0))
        i += 1
    return outs[-1][1]


@pytest.mark.parametrize("fn, name, kind", [
    (_tuple_under_tensor_if, "outs", "tuple"), (_string_under_tensor_if, "names", "str"),
    (_none_under_tensor_if, "outs", "NoneType"), (_pairs_in_tensor_loop, "outs", "tuple")])
@pytest.mark.parametrize("value", [1.0, -1.0])
def test_a_value_no_tensor_holds_appended_under_a_tensor_construct_is_an_error(
        fn, name, kind, value):
    # Under an `if`: appended in place, shown on every path (len 1 where
    # eagerly 0). In a loop: numpy's TypeError about a Variable without a value.
    with pytest.raises(ControlFlowError,
                       match=rf"(?s)'{name}\.append\(\.\.\.\)' of a {kind} inside an `if` or a "
                             rf"loop on a tensor \(.*test_list_appends_under_tensor_constructs\.py, line \d+\)"):
        to_static(fn)(tensor([value]))


@pytest.mark.parametrize("gate", [1.0, -1.0])
def test_values_no_tensor_holds_appended_on_a_python_condition_keep_python_semantics(gate):
    for fn in (_tuple_under_tensor_if, _string_under_tensor_if, _none_under_tensor_if):
        assert_same(to_static(fn)(np.float32(gate)), fn(np.float32(gate)))
