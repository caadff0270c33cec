"""A list the function creates and hands out (`self.outs = outs`,
`d["k"] = outs`, `pair = (outs, y)`, `keep(outs)`, a closure reading it)
before a tensor `if` or loop appends to it: the other reference would never
see the program's appends, so the append is a clear error naming the list,
the file and the line (`analysis.fresh_lists` counts the list as one others
may hold). Handed out after the construct, the list is carried as before;
reading it before the construct is no escape.

Each case runs eagerly and under `to_static` on the same inputs: tensor
values build the static construct, Python values keep plain Python semantics.
"""

import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import assert_same, assert_same_run, program_ops, tensor


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
                             r"\(.*test_lists_handed_out_before_tensor_constructs\.py, line \d+\).*'outs' (was not created "
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
