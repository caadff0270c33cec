"""A list a tensor loop fills keeps Python list semantics after the loop
(DESIGN.md §4): its name may be rebound (`outs = d2s.stack(outs)`, `res =
res[::-1]`, `res = d2s.concat(res)`) and it may be popped (`a.pop()`,
`a.pop(i)`) after the loop, in it and under a tensor `if` (so may a list the
function made of tensors), with the loop's trip count a tensor (the list's length is
known only when the program runs). Each case: eager vs `to_static` on the
numpy and xla backends (xla with fallbacks made errors), values and
gradients.

Before: a rebinding after the loop made the analysis (`fresh_lists`) take
the name for one that may hold another list, so the loop's append raised a
ControlFlowError telling the user to do what the code did; `a.pop()` after
the loop raised "'Variable' object has no attribute 'pop'".
"""
import ast
import importlib.util
import textwrap
import warnings

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import ControlFlowError
from d2s.static.backend import BackendFallbackWarning

BACKENDS = ["numpy", pytest.param("xla", marks=pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="jax is not installed"))]


def _fill(x, w, n):
    outs = []
    for i in range(n):
        outs.append(d2s.tanh(d2s.matmul(x, w)) * (i + 1.0))
    return outs


def rebound_by_stack(x, w, n):
    outs = []
    for i in range(n):
        outs.append(d2s.tanh(d2s.matmul(x, w)) * (i + 1.0))
    outs = d2s.stack(outs)
    return outs.sum(0)


def rebound_reversed(x, w, n):
    res = []
    for i in range(n):
        res.append(x * (i + 1.0) + w.sum())
    res = res[::-1]
    return res[0] * 2.0 + res[-1]


def rebound_by_concat(x, w, n):
    res = []
    for i in range(n):
        res.append(d2s.matmul(x, w) + i)
    res = d2s.concat(res)
    return res * 1.5


def rebound_in_a_while(x, w, n):
    hs = []
    h = x
    i = 0
    while i < n:
        h = d2s.tanh(d2s.matmul(h, w))
        hs.append(h)
        i += 1
    hs = d2s.stack(hs, axis=1)
    return hs.mean(1)


def popped_last(x, w, n):
    a = []
    for i in range(n):
        a.append(d2s.matmul(x, w) * (i + 1.0))
    last = a.pop()
    return last * 3.0 + d2s.stack(a).sum(0)


def popped_first(x, w, n):
    a = []
    for i in range(n):
        a.append(d2s.matmul(x, w) * (i + 1.0))
    first = a.pop(0)
    return first * 3.0 + d2s.stack(a).sum(0) + len(a)


def popped_second_to_last(x, w, n):
    a = []
    for i in range(n):
        a.append(d2s.matmul(x, w) * (i + 1.0))
    b = a.pop(-2)
    return b * 3.0 + d2s.stack(a).sum(0)


def popped_and_dropped(x, w, n):
    a = []
    for i in range(n):
        a.append(x * (i + 1.0) + w.sum())
    a.pop()
    a.pop(1)
    return d2s.stack(a).sum(0)


def popped_in_return(x, w, n):
    a = []
    for i in range(n):
        a.append(d2s.matmul(x, w) * (i + 1.0))
    return a.pop()


def popped_in_the_loop(x, w, n):
    a = []
    for i in range(n):
        a.append(d2s.matmul(x, w) * (i + 1.0))
        a.append(x)
        a.pop()
    return d2s.stack(a).sum(0)


def popped_under_a_tensor_if(x, w, n):
    a = []
    for i in range(n):
        a.append(d2s.matmul(x, w) * (i + 1.0))
    if x.sum() > 0:
        last = a.pop()
    else:
        last = a.pop(0)
    return last * 2.0 + d2s.stack(a).sum(0)


def popped_under_the_other_side(x, w, n):
    a = []
    for i in range(n):
        a.append(d2s.matmul(x, w) * (i + 1.0))
    if x.sum() < 0:
        last = a.pop()
    else:
        last = a.pop(0)
    return last * 2.0 + d2s.stack(a).sum(0)


def own_list_popped_under_a_tensor_if(x, w, n):
    a = [x, d2s.matmul(x, w), x * 3.0]
    if w.sum() > 0:
        a.pop(0)
    if w.sum() < 0:
        b = a.pop()
    else:
        b = x
    return d2s.stack(a).sum(0) + b + len(a)


def own_list_popped_in_a_tensor_loop(x, w, n):
    a = [x * (k + 1.0) for k in range(6)]
    b = w.sum() * x
    for i in range(n):
        item = a.pop()
        b = b + item * d2s.matmul(x, w)
    return b + d2s.stack(a).sum(0)


def _pop_in_an_expression(x, n):
    a = [x * (k + 1.0) for k in range(6)]
    b = x
    for i in range(n):
        b = b + a.pop() * len(a)   # (`a` read again: the pop cannot go first)
    return b


def test_a_pop_inside_an_expression_in_a_tensor_loop_says_to_write_it_on_its_own():
    x = d2s.to_tensor(np.ones((2,), "float32"))
    with pytest.raises(ControlFlowError, match=r"'a\.pop\(\.\.\.\)' inside an expression.*"
                                               r"`item = a\.pop\(\.\.\.\)` on a line of its own"):
        to_static(_pop_in_an_expression)(x, d2s.to_tensor(3))


CASES = [rebound_by_stack, rebound_reversed, rebound_by_concat, rebound_in_a_while, popped_last,
         popped_first, popped_second_to_last, popped_and_dropped, popped_in_return,
         popped_in_the_loop, popped_under_a_tensor_if, popped_under_the_other_side,
         own_list_popped_under_a_tensor_if, own_list_popped_in_a_tensor_loop]


POPS_IN_THE_MIDDLE = (popped_second_to_last, popped_and_dropped)


def _inputs():
    rng = np.random.default_rng(0)
    return (rng.normal(size=(2, 3)).astype("float32") * 0.5,
            rng.normal(size=(3, 3)).astype("float32") * 0.5)


def _run(fn, x0, w0, n):
    """(result, dx, dw) of fn (a callable) on fresh leaves."""
    x = d2s.to_tensor(x0, stop_gradient=False)
    w = d2s.to_tensor(w0, stop_gradient=False)
    out = fn(x, w, d2s.to_tensor(np.array(n)))
    (out * out).mean().backward()
    return out.numpy(), x.grad.numpy(), w.grad.numpy()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_a_list_a_tensor_loop_filled_is_rebound_and_popped_as_eagerly(fn, n, backend):
    x0, w0 = _inputs()
    want = _run(fn, x0, w0, n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BackendFallbackWarning)
        got = _run(to_static(fn, backend=backend), x0, w0, n)
    fallbacks = [str(w.message) for w in caught if w.category is BackendFallbackWarning]
    if backend == "xla" and fn in POPS_IN_THE_MIDDLE:
        # docs/backends.md: `pop(i)` of a middle row joins two parts of run-time length
        assert fallbacks and all("'concat'" in m for m in fallbacks), fallbacks
    else:
        assert not fallbacks, fallbacks
    for g, e in zip(got, want):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_one_program_serves_every_length():
    """The list's length is a run-time value: one converted function, called
    with other trip counts, pops the last row of each."""
    x0, w0 = _inputs()
    static = to_static(popped_last)
    for n in (2, 4, 7):
        want = _run(popped_last, x0, w0, n)
        got = _run(static, x0, w0, n)
        for g, e in zip(got, want):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_the_loop_is_a_program_op_for_a_tensor_count_and_python_for_an_int(fn):
    """A tensor trip count builds control-flow ops (a `while`, or the `cond`
    of a pop under a tensor `if`); a Python int unrolls the loop over a Python
    list, whose rebinding and pops are Python's own (same numbers as eagerly)."""
    x0, w0 = _inputs()
    x, w = d2s.to_tensor(x0), d2s.to_tensor(w0)
    static = to_static(fn)
    ops = {op.type for op in static.get_concrete_program(
        x, w, d2s.to_tensor(np.array(3))).main_program.all_ops()}
    assert ops & {"while", "cond"}, sorted(ops)
    unrolled = {op.type for op in static.get_concrete_program(x, w, 3).main_program.all_ops()}
    assert not unrolled & {"while"} and not any(t.startswith("array_") for t in unrolled)
    # rtol 1e-5: under D2S_BACKEND=xla the program's matmuls and sums are XLA's.
    np.testing.assert_allclose(static(x, w, 3).numpy(), fn(x, w, 3).numpy(), rtol=1e-5)


def _pop_at(x, n, i):
    a = []
    for k in range(n):
        a.append(x * k)
    return a.pop(i)


def test_pop_with_a_tensor_index_says_what_to_write():
    x = d2s.to_tensor(np.ones((2,), "float32"))
    with pytest.raises(TypeError, match=r"Python int index.*lst\[i\]"):
        to_static(_pop_at)(x, d2s.to_tensor(3), d2s.to_tensor(1))


class _Holder:
    def __init__(self, items):
        self.items = items


def rebound_before_the_loop(x, n, holder):
    outs = []
    outs = holder.items
    for i in range(n):
        outs.append(x * i)
    return d2s.stack(outs)


def test_a_name_rebound_to_another_list_before_the_loop_is_still_an_error():
    """Rebinding only after the loop is fine; a name that may hold the
    caller's list when the tensor loop appends to it is still refused."""
    x = d2s.to_tensor(np.ones((2,), "float32"))
    with pytest.raises(ControlFlowError, match=r"'outs\.append\(\.\.\.\)'.*'outs'"):
        to_static(rebound_before_the_loop)(x, d2s.to_tensor(3), _Holder([x]))


def test_fresh_lists_ignore_a_rebinding_after_the_changes():
    from d2s.convert.analysis.fresh_lists import fresh_list_names
    fn = ast.parse(textwrap.dedent("""
        def f(x, n, kept):
            after = []
            for i in range(n):
                after.append(x)
            after = stack(after)
            before = []
            before = kept
            before.append(x)
            looped = []
            for t in range(n):
                looped.append(x)
                looped = kept
            renewed = []
            for t in range(n):
                renewed = []
                renewed.append(x)
                renewed = stack(renewed)
    """)).body[0]
    assert fresh_list_names(fn) == {"after", "renewed"}


def _pop_after_the_loop_in_an_expression(x, n):
    a = []
    for i in range(n):
        a.append(x * i)
    return a.pop() * len(a)


def _reverse_after_the_loop(x, n):
    a = []
    for i in range(n):
        a.append(x * i)
    a.reverse()
    return a[0]


@pytest.mark.parametrize("fn, fix", [
    (_pop_after_the_loop_in_an_expression, r"`item = a\.pop\(\.\.\.\)` on a line of its own"),
])
def test_changing_a_tensor_array_in_place_in_an_expression_says_what_to_write(fn, fix):
    x = d2s.to_tensor(np.ones((2,), "float32"))
    with pytest.raises(ControlFlowError, match=r"(?s)the list 'a' was filled by a loop on a tensor.*"
                                               + fix):
        to_static(fn)(x, d2s.to_tensor(3))


def test_reversing_a_tensor_array_after_the_loop_matches_eager():
    x = d2s.to_tensor(np.ones((2,), "float32"))
    n = d2s.to_tensor(3)
    np.testing.assert_array_equal(to_static(_reverse_after_the_loop)(x, n).numpy(),
                                  _reverse_after_the_loop(x, n).numpy())
