"""Model code the fourth hunt found giving silent wrong answers, each compared
eagerly and under `to_static` on the same inputs (tensor values: the static
construct really built; Python values: plain Python semantics kept).

Found by this file (each failed before its fix):
* a list the function creates that escapes before a tensor `if` or loop
  appends to it (`self.outs = outs`, `d["k"] = outs`, `pair = (outs, y)`,
  `keep(outs)`, a closure reading it): the other reference never saw the
  append (`len(self.outs)` 0 where eagerly 1). `analysis.fresh_lists` now
  counts such a list as one others may hold, so the append is the clear
  error naming the list, the file and the line; handed out after the
  construct (`self.outs = outs` after the loop) it is carried as before.
* `max(outs)` / `min(outs)` of a list appended in a tensor loop (and `max(x)`
  of any static Variable): the whole array, where eagerly the first largest
  row; `sum(outs)` and `for o in reversed(outs)`: a TypeError. They fold
  (walk) the rows now (`_jst.convert_sum`, `_jst.convert_reversed`).
* a Layer attribute a tensor `if` or loop writes (`self.count += 1`,
  `self.last = h`): after the call the layer kept the build-time Variable, so
  eager code (`layer.count + 1` built another Variable) and the next call read
  it. It is carried inside the trace as before; after each run the write is
  replayed with the run's value (issue 25, jit.outliving; a failed trace puts
  the old value back).
* a helper raising under a tensor `if` (`if x.sum() < 0: raise ValueError`),
  called inside the caller's `try: ... except ValueError:`: eagerly the
  `except` took it; the program raised it at run time, past the `except`.
  Refused now while the program is built, naming the raise and the `try`
  (`_jst.try_body` around each converted `try` body); a raise no handler
  around would take stays a run-time error.
* a tuple, string, dict or None appended under a tensor `if` to a list both
  branches share: appended in place, shown on every path (`len(names)` 1
  where eagerly 0); in a tensor loop: numpy's TypeError about a Variable.
  A ControlFlowError naming the list, the file and the line now.
"""

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import assert_same, assert_same_run, program_ops, tensor


# ---- a list the function creates, handed out before a tensor construct changes it ----

_KEPT = []


def _keep(items):
    _KEPT.append(items)


class _HandsOutToAttribute(nn.Layer):
    def forward(self, x, gate):
        outs = []
        self.outs = outs
        if gate > 0:
            outs.append(x)
        return x * len(self.outs)


def _hands_out_to_dict(x, gate):
    outs = []
    d = {"k": outs}
    if gate > 0:
        outs.append(x)
    return x * len(d["k"])


def _hands_out_to_subscript(x, gate):
    outs = []
    d = {}
    d["k"] = outs
    if gate > 0:
        outs.append(x)
    return x * len(d["k"])


def _hands_out_to_call(x, gate):
    outs = []
    _keep(outs)
    if gate > 0:
        outs.append(x)
    return x * len(_KEPT[-1])


def _hands_out_in_tuple(x, gate):
    outs = []
    pair = (outs, x)
    if gate > 0:
        outs.append(x)
    return x * len(pair[0])


def _hands_out_to_closure(x, gate):
    outs = []

    def count():
        return len(outs)
    if gate > 0:
        outs.append(x)
    return x * count()


def _hands_out_then_while(x, gate):
    outs = []
    d = {"k": outs}
    i = 0
    while gate > i:
        outs.append(x)
        i += 1
    return x * len(d["k"])


def _hands_out_in_loop_after_append(x, gate, n):
    # the escape follows the append in the source, but the loop brings the
    # next trip's append after it
    outs = []
    kept = {}
    for _ in range(n):
        if gate > 0:
            outs.append(x)
        kept["k"] = outs
    return x * len(kept["k"])


_ESCAPED_CASES = [
    (lambda: _HandsOutToAttribute(), (1.0,)),
    (lambda: _hands_out_to_dict, (1.0,)),
    (lambda: _hands_out_to_subscript, (1.0,)),
    (lambda: _hands_out_to_call, (1.0,)),
    (lambda: _hands_out_in_tuple, (1.0,)),
    (lambda: _hands_out_to_closure, (1.0,)),
    (lambda: _hands_out_then_while, (2.0,)),
    (lambda: _hands_out_in_loop_after_append, (1.0, 2)),
]


@pytest.mark.parametrize("make, args", _ESCAPED_CASES)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_list_handed_out_before_a_tensor_construct_appends_is_an_error_naming_it(
        make, args, sign):
    # Eagerly the other reference sees the append (len 1 or 2 where x > 0);
    # the program's array never reached it (len 0): a silent wrong answer.
    x = tensor([sign * args[0]])
    with pytest.raises(ControlFlowError,
                       match=r"(?s)'outs\.append\(\.\.\.\)' inside an `if` or a loop on a tensor "
                             r"\(.*test_model_code_hunt4\.py, line \d+\).*'outs' (was not created "
                             r"inside it.*handed to before the construct|is carried there as a "
                             r"tensor array)"):
        to_static(make())(x, x.sum(), *args[1:])


@pytest.mark.parametrize("make, args", _ESCAPED_CASES)
def test_a_list_handed_out_keeps_python_semantics_on_python_values(make, args):
    # The same code on a Python condition: nothing traced, the list changes in place.
    for gate in (args[0], -args[0]):
        fn = make()
        static = to_static(fn) if not isinstance(fn, nn.Layer) else to_static(make())
        assert_same_run(static, fn, lambda: (tensor([1.0, 2.0], grad=True), gate, *args[1:]))


def _appends_then_hands_out(x):
    outs = []
    i = 0
    while x.sum() > i:
        outs.append(x * i)
        i += 1
    kept = {"k": outs}
    _keep(outs)
    return d2s.stack(kept["k"]).sum(0) + len(_KEPT[-1])


class _StoresAfterTheLoop(nn.Layer):
    def forward(self, x):
        outs = []
        for i in range(3):
            if x.sum() > i:
                outs.append(x * i)
        self.outs = outs
        return d2s.stack(self.outs).sum(0)


def _rebound_in_each_trip(x):
    total = x * 0.0
    for _ in range(2):
        outs = []
        if x.sum() > 0:
            outs.append(x)
        _keep(outs)
        total = total + len(outs)
    return total


def test_a_list_handed_out_after_the_construct_is_carried_as_before():
    x = lambda: (tensor([2.0, 1.0], grad=True),)
    static = to_static(_appends_then_hands_out)
    assert_same_run(static, _appends_then_hands_out, x)
    assert "while" in program_ops(static, tensor([2.0, 1.0]))
    layer = _StoresAfterTheLoop()
    assert_same(to_static(layer)(tensor([2.0, 1.0])), layer(tensor([2.0, 1.0])))
    for value in (1.0, -1.0):
        static = to_static(_rebound_in_each_trip)
        assert_same(static(tensor([value])), _rebound_in_each_trip(tensor([value])))
    assert "cond" in program_ops(static, tensor([1.0]))


def _reads_before_the_construct(x):
    outs = [x]
    n = len(outs) + sum(len(o.shape) for o in outs)
    s = d2s.stack(outs)
    if x.sum() > 0:
        outs.append(x * 2.0)
    return d2s.stack(outs).sum(0) + n + s.sum()


def test_reading_a_list_before_the_construct_is_no_escape():
    static = to_static(_reads_before_the_construct)
    for value in (1.0, -1.0):
        assert_same_run(static, _reads_before_the_construct,
                        lambda: (tensor([value, 2.0], grad=True),))
    assert "cond" in program_ops(static, tensor([1.0, 2.0]))


# ---- builtins over a list appended in a tensor loop --------------------------------

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


# ---- a layer's attribute written under a tensor `if` or loop -----------------------

class _Counts(nn.Layer):
    def __init__(self):
        super().__init__()
        self.count = 0

    def forward(self, x, gate=None):
        if (x.sum() if gate is None else gate) > 0:
            self.count += 1
        return x * 2.0


class _KeepsLast(nn.Layer):
    def __init__(self):
        super().__init__()
        self.last = tensor([0.0])

    def forward(self, x):
        if x.sum() > 0:
            self.last = x * 2.0
        else:
            self.last = x * 3.0
        return self.last + 1.0


class _KeepsLastOfLoop(nn.Layer):
    def __init__(self):
        super().__init__()
        self.state = tensor([0.0])

    def forward(self, x):
        i = 0
        while x.sum() > i:
            self.state = self.state + x
            i += 1
        return x


@pytest.mark.parametrize("make, name", [
    (_Counts, "count"), (_KeepsLast, "last"), (_KeepsLastOfLoop, "state")])
@pytest.mark.parametrize("value", [1.0, -1.0])
def test_a_layer_attribute_a_tensor_construct_wrote_is_no_build_time_variable_after_the_call(
        make, name, value):
    # The layer kept the build-time Variable (cond_5: int64[]): eager code
    # after the call (`layer.count + 1` built another Variable), and the
    # next call of the same program, read it instead of the path taken. The
    # write is now replayed after each run (issue 25, jit.outliving): the
    # attribute holds what the eager call leaves, call after call.
    layer, eager = make(), make()
    static = to_static(layer)
    for _ in range(3):
        assert_same(static(tensor([value])), eager(tensor([value])))
        got, want = getattr(layer, name), getattr(eager, name)
        np.testing.assert_array_equal(np.asarray(got.numpy() if hasattr(got, "numpy") else got),
                                      np.asarray(want.numpy() if hasattr(want, "numpy")
                                                 else want))
        assert type(got + 1) is type(want + 1) or hasattr(got, "numpy")


def test_a_failed_trace_leaves_the_layer_attribute_as_it_was():
    class _FailsAfterTheIf(_KeepsLast):
        def forward(self, x):
            super().forward(x)
            raise RuntimeError("after the write")
    layer = _FailsAfterTheIf()
    before = layer.last
    with pytest.raises(RuntimeError, match="after the write"):
        to_static(layer)(tensor([1.0]))
    assert layer.last is before


class _Scratch:
    """A user object (not a layer) the call writes and reads: no error."""


def _writes_scratch(x):
    scratch = _Scratch()
    if x.sum() > 0:
        scratch.h = x * 2.0
    else:
        scratch.h = -x
    return scratch.h + 1.0


def test_an_object_of_the_call_written_under_a_tensor_if_is_carried():
    static = to_static(_writes_scratch)
    for value in (1.0, -1.0):
        assert_same_run(static, _writes_scratch, lambda: (tensor([value, 2.0], grad=True),))
    assert "cond" in program_ops(static, tensor([1.0, 2.0]))


@pytest.mark.parametrize("value", [1.0, -1.0])
def test_a_layer_attribute_written_on_a_python_condition_keeps_python_semantics(value):
    # (once: a Python side effect happens once per trace, DESIGN §4)
    layer, eager = _Counts(), _Counts()
    assert_same(to_static(layer)(tensor([1.0]), value), eager(tensor([1.0]), value))
    assert layer.count == eager.count == (1 if value > 0 else 0)


# ---- a helper raising under a tensor `if`, called inside the caller's `try` --------

def _checked(x):
    if x.sum() < 0:
        raise ValueError("negative input")
    return x * 2.0


def _catches_the_helpers_error(x):
    try:
        y = _checked(x)
    except ValueError:
        y = x * 0.0
    return y + 1.0


def _catches_in_a_tensor_loop(x):
    total = x * 0.0
    i = 0
    while i < x.sum():
        try:
            total = total + _checked(x - i)
        except (KeyError, ValueError):
            total = total - 1.0
        i += 1
    return total


def _catches_another_error(x):
    try:
        y = _checked(x)
    except KeyError:
        y = x * 0.0
    return y + 1.0


@pytest.mark.parametrize("fn", [_catches_the_helpers_error, _catches_in_a_tensor_loop])
@pytest.mark.parametrize("value", [2.0, -1.0])
def test_a_raise_under_a_tensor_if_the_callers_except_would_catch_is_refused(fn, value):
    # Eagerly the `except` takes the helper's error (x <= 0); the program
    # raised it when it ran, past the `except` (no word of why).
    fn(tensor([value]))
    with pytest.raises(ControlFlowError,
                       match=r"(?s)ValueError\(negative input\) is raised under an `if` on a "
                             r"tensor.*test_model_code_hunt4\.py, line \d+\), inside the `try` at "
                             r".*test_model_code_hunt4\.py, line \d+, whose `except` takes it.*"
                             r"raise ValueError\(\"negative input\"\)"):
        to_static(fn)(tensor([value]))


def test_a_raise_no_except_around_takes_stays_a_run_time_error():
    static = to_static(_catches_another_error)
    assert_same(static(tensor([2.0])), _catches_another_error(tensor([2.0])))
    for fn in (static, _catches_another_error):
        with pytest.raises(ValueError, match="negative input"):
            fn(tensor([-1.0]))


def _checked_gate(x, gate):
    if gate < 0:
        raise ValueError("negative gate")
    return x * 2.0


def _catches_on_a_python_gate(x, gate):
    try:
        y = _checked_gate(x, gate)
    except ValueError:
        y = x * 0.0
    return y + 1.0


@pytest.mark.parametrize("gate", [2.0, -1.0])
def test_a_helper_raising_on_a_python_condition_is_caught_as_eagerly(gate):
    static = to_static(_catches_on_a_python_gate)
    assert_same_run(static, _catches_on_a_python_gate,
                    lambda: (tensor([1.0, 2.0], grad=True), gate))


# ---- a value no tensor can hold, appended under a tensor `if` or loop -------------

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
                             rf"loop on a tensor \(.*test_model_code_hunt4\.py, line \d+\)"):
        to_static(fn)(tensor([value]))


@pytest.mark.parametrize("gate", [1.0, -1.0])
def test_values_no_tensor_holds_appended_on_a_python_condition_keep_python_semantics(gate):
    for fn in (_tuple_under_tensor_if, _string_under_tensor_if, _none_under_tensor_if):
        assert_same(to_static(fn)(np.float32(gate)), fn(np.float32(gate)))
