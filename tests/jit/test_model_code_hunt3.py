"""Model code the third hunt found giving silent wrong answers, each compared
eagerly and under `to_static` on the same inputs (tensor values: the static
construct really built; Python values: plain Python semantics kept).

Found by this file (each failed before its fix):
* a list appended to inside a helper (`def add(cache, x): cache.append(x)`)
  called from a tensor `if` or loop (`add(outs, h)`, `add(self.cache, h)`),
  or by a nested function reading the caller's list, or a parameter list a
  helper's own tensor `if` appends to, or `cache = self.cache` appended to
  under a tensor `if`: the append showed on every path (or on none, the
  program's array never reaching the caller's list). The rewrite now knows
  which lists a function creates itself (`analysis.fresh_lists`), and marks
  each one converted code creates while a tensor construct is traced
  (`_jst.new_list`); changing any other list in place while a tensor branch
  or loop is traced is a clear error naming the list, the file and the line
  (a list made in the loop's body or in a helper it calls stays appendable).
* `outs.pop()` / `insert` / `remove` / `clear`, `d.pop(k)` / `update`,
  `seen.add(k)` under a tensor `if` or loop, on a container made before it:
  the change showed on every path (`len(outs)` 1 where eagerly 2). The same
  error as for appends now; a container made inside the trace is free.
* a name a nested function declares `nonlocal` and writes under a tensor
  `if` at its end: the write was dropped (the name looked dead after the
  `if`), the caller read the value from before.
* `if t:` / `while t:` / `a or b` / `x if t else y` / `assert t` with a
  tensor `t` of many (or no) elements: eagerly `bool()`'s ValueError; the
  program raised ControlFlowError (a TypeError, so `except ValueError` took
  it only eagerly), and `assert t` passed silently. Now bool()'s ValueError
  at the user's line, before the construct's trace (an `except` may take it).
* two different strings from the branches of a tensor `if`: the message said
  "a str in one branch and a str in the other"; it names the strings now.
* a comprehension whose `if` tests a tensor (`[v for v in xs if v.sum() > 0]`):
  Variable.__bool__'s TypeError advising to decorate the (decorated)
  function; a ControlFlowError naming the comprehension's line and what to
  write instead.
* recursion stopped by a tensor condition (`if x.sum() > 10: return x` then
  `return f(x * 2)`): a bare "maximum recursion depth exceeded"; the message
  now says the trace follows both paths and to write a `while` loop.
"""
import re

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import assert_same, assert_same_run, program_ops, tensor


# ---- lists appended to by helpers ----------------------------------------------

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
                             rf"tensor \(.*test_model_code_hunt3\.py, line \d+\).*"
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
                                               r"test_model_code_hunt3\.py, line \d+"):
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
                       match=r"(?s)'outs\.append\(\.\.\.\)'.*test_model_code_hunt3\.py"):
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
                             r"tensor \(.*test_model_code_hunt3\.py, line \d+\)"):
        to_static(_parts_made_before_an_inner_tensor_if)(tensor([1.0, 1.0]),
                                                         tensor(3, dtype=np.int64))


# ---- `nonlocal` names a nested function writes under a tensor `if` / loop ----------

def _nonlocal_under_tensor_if(x, gate):
    count = x * 0.0

    def bump(y):
        nonlocal count
        if gate > 0:
            count = count + y    # the function ends here: only its caller reads it
    bump(x)
    return count


def _nonlocal_in_tensor_while(x, gate):
    total = x * 0.0

    def run(y):
        nonlocal total
        i = 0
        while gate > i:
            total = total + y
            i += 1
    run(x)
    return total


@pytest.mark.parametrize("fn, op", [(_nonlocal_under_tensor_if, "cond"),
                                    (_nonlocal_in_tensor_while, "while")])
@pytest.mark.parametrize("value", [2.5, -1.0])
def test_a_nonlocal_name_written_under_a_tensor_construct_reaches_the_caller(fn, op, value):
    # Was a silent wrong answer: the name is dead inside the nested function
    # after the `if` (liveness saw only its own body), so the branch's write
    # was no output of the `cond` and the caller read the value from before.
    static = to_static(fn)
    assert_same_run(static, fn, lambda: (tensor([value, 0.5], grad=True), tensor(value)))
    assert op in program_ops(static, tensor([value, 0.5]), tensor(value))


@pytest.mark.parametrize("fn", [_nonlocal_under_tensor_if, _nonlocal_in_tensor_while])
@pytest.mark.parametrize("gate", [2.0, -1.0])
def test_a_nonlocal_name_written_under_a_python_construct_keeps_python_semantics(fn, gate):
    static = to_static(fn)
    assert_same_run(static, fn, lambda: (tensor([2.0, 0.5], grad=True), gate))
    assert not program_ops(static, tensor([2.0, 0.5]), gate) & {"cond", "while"}


# ---- the truth of a tensor of many elements -------------------------------------------

def _if_many(x):
    if x > 0:
        return x
    return -x


def _while_many(x):
    while x > 0:
        x = x - 1.0
    return x


def _or_many(x, z):
    return z or x


def _ternary_many(x):
    return x if x > 0 else -x


def _assert_many(x):
    assert x > 0, "not positive"
    return x


def _if_many_caught(x):
    try:
        if x > 0:
            y = x
        else:
            y = -x
    except ValueError:
        y = x * 10.0
    return y


@pytest.mark.parametrize("fn", [_if_many, _while_many, _ternary_many, _assert_many])
@pytest.mark.parametrize("value", [[1.0, 2.0], [1.0, -2.0], []])
def test_the_truth_of_a_tensor_of_many_elements_raises_bools_value_error(fn, value):
    x = tensor(np.float32(value))
    with pytest.raises(ValueError, match=r"bool\(\) of a Tensor with \d elements is ambiguous"):
        fn(x)
    with pytest.raises(ValueError, match=r"(?s)bool\(\) of a Tensor with \d elements is "
                                         r"ambiguous.*test_model_code_hunt3\.py\", line \d+"):
        to_static(fn)(x)


def test_the_truth_of_many_elements_in_an_or_raises_bools_value_error():
    x = tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="ambiguous"):
        _or_many(x, x)
    with pytest.raises(ValueError, match="ambiguous"):
        to_static(_or_many)(x, x)


def test_an_except_value_error_takes_the_truth_error_as_eagerly():
    assert_same_run(to_static(_if_many_caught), _if_many_caught,
                    lambda: (tensor([1.0, -2.0], grad=True),))


@pytest.mark.parametrize("fn", [_if_many, _while_many, _ternary_many])
def test_the_truth_of_a_one_element_tensor_still_builds_the_construct(fn):
    static = to_static(fn)
    assert_same_run(static, fn, lambda: (tensor([2.5], grad=True),))
    assert program_ops(static, tensor([2.5])) & {"cond", "while"}


def _tag_under_tensor_if(x):
    if x.sum() > 0:
        tag = "positive"
    else:
        tag = "negative"
    return x, tag


def test_two_strings_a_tensor_if_gives_are_named_by_their_values():
    # was "'tag' is a str in one branch and a str in the other"
    with pytest.raises(ControlFlowError, match=r"(?s)'tag' is the str 'positive' in one branch "
                                               r"and the str 'negative' in the other.*"
                                               r"test_model_code_hunt3\.py"):
        to_static(_tag_under_tensor_if)(tensor([1.0]))
    assert to_static(_tag_under_tensor_if)(np.float32(1.0))[1] == "positive"


# ---- recursion whose base case is a tensor condition ------------------------------------

def _doubled_until_large(x):
    if x.sum() > 10.0:
        return x
    return _doubled_until_large(x * 2.0)


def test_recursion_stopped_by_a_tensor_condition_says_why_it_never_ends():
    assert_same(_doubled_until_large(tensor([1.0, 2.0])), tensor([4.0, 8.0]))
    with pytest.raises(RecursionError, match=r"(?s)while tracing a branch of an `if` on a "
                                             r"tensor \(.*test_model_code_hunt3\.py, line \d+\)"
                                             r".*`while` loop"):
        to_static(_doubled_until_large)(tensor([1.0, 2.0]))
    # and the next build starts clean: a Python-valued run still works
    assert to_static(_doubled_until_large)(np.float32(20.0)) == 20.0


# ---- comprehensions filtering on a tensor ---------------------------------------------

def _kept_rows(x):
    kept = [row * 2.0 for row in [x, -x, x + 1.0] if row.sum() > 0]
    return d2s.stack(kept)


def _kept_by_key(x):
    return {k: v for k, v in (("a", x), ("b", -x)) if v.sum() > 0}


def _kept_sum(x):
    return sum(v for v in [x, -x] if v.sum() > 0)


@pytest.mark.parametrize("fn", [_kept_rows, _kept_by_key, _kept_sum])
def test_a_comprehension_filtering_on_a_tensor_is_an_error_naming_its_line(fn):
    fn(tensor([1.0, 2.0]))   # eagerly fine
    with pytest.raises(ControlFlowError, match=r"(?s)a comprehension's `if` tests a tensor "
                                               r"\(.*test_model_code_hunt3\.py, line \d+\).*"
                                               r"`for` loop"):
        to_static(fn)(tensor([1.0, 2.0]))


def _kept_python(x, keep):
    kept = [v * k for k, v in enumerate([x, x * 2.0, x * 3.0]) if k in keep]
    return d2s.stack(kept)


def test_a_comprehension_filtering_on_python_values_keeps_python_semantics():
    static = to_static(_kept_python)
    assert_same_run(static, _kept_python, lambda: (tensor([1.0, 2.0], grad=True), (0, 2)))


# ---- other in-place changes of lists, dicts and sets -----------------------------------

def _pop_under_tensor_if(x, gate):
    outs = [x, x * 2.0]
    if gate > 0:
        outs.pop()
    return d2s.stack(outs).sum(0) + len(outs)


def _insert_under_tensor_if(x, gate):
    outs = [x]
    if gate > 0:
        outs.insert(0, x * 2.0)
    return d2s.stack(outs).sum(0)


def _dict_pop_under_tensor_if(x, gate):
    d = {"a": x, "b": x * 2.0}
    if gate > 0:
        d.pop("b")
    return sum(d.values())


def _dict_update_in_tensor_loop(x, gate):
    d = {"a": x}
    i = 0
    while gate > i:
        d.update(b=x * i)
        i += 1
    return sum(d.values())


def _set_add_under_tensor_if(x, gate):
    seen = set()
    if gate > 0:
        seen.add("positive")
    return x + len(seen)


_CHANGED_CASES = [(_pop_under_tensor_if, "outs", "pop", "list"),
                  (_insert_under_tensor_if, "outs", "insert", "list"),
                  (_dict_pop_under_tensor_if, "d", "pop", "dict"),
                  (_dict_update_in_tensor_loop, "d", "update", "dict"),
                  (_set_add_under_tensor_if, "seen", "add", "set")]


# A list the function made, popped under a tensor `if`, is carried as a tensor
# array now (tests/jit/test_lists_around_tensor_loops.py): no error.
@pytest.mark.parametrize("fn, name, method, kind", _CHANGED_CASES[1:])
def test_a_container_changed_in_place_under_a_tensor_construct_is_an_error(fn, name, method,
                                                                          kind):
    x = tensor([1.0, 2.0])
    with pytest.raises(ControlFlowError,
                       match=rf"(?s)'{name}\.{method}\(\.\.\.\)' inside an `if` or a loop on "
                             rf"a tensor \(.*test_model_code_hunt3\.py, line \d+\).*the {kind} "
                             rf"'{name}'"):
        to_static(fn)(x, x.sum() - 4.0)


@pytest.mark.parametrize("fn", [case[0] for case in _CHANGED_CASES])
@pytest.mark.parametrize("gate", [2.0, -1.0])
def test_a_container_changed_in_place_under_a_python_construct_keeps_python_semantics(
        fn, gate):
    static = to_static(fn)
    assert_same_run(static, fn, lambda: (tensor([1.0, 2.0], grad=True), gate))


def _popped_in_each_trip(x, n):
    i = d2s.zeros([], "int64")
    while i < n:
        parts = [x, x * 2.0, x * 3.0]      # this trip's own list
        parts.pop(0)
        parts.insert(0, x * 0.5)
        x = d2s.stack(parts).sum(0) / 4.0
        i = i + 1
    return x


def test_a_container_made_inside_the_trip_may_change_in_place():
    static = to_static(_popped_in_each_trip)
    assert_same_run(static, _popped_in_each_trip,
                    lambda: (tensor([1.0, 2.0], grad=True), tensor(3, dtype=np.int64)))
    assert "while" in program_ops(static, tensor([1.0, 2.0]), tensor(3, dtype=np.int64))
