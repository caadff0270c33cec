"""What the conversion fuzzer found (tests/jit/test_conversion_properties.py),
each minimised to the smallest function that shows it.

Every fixed finding is a plain test here: static == eager == a numpy
reference, values, dtypes and gradients, on both executors, and the same
function on Python values keeps Python semantics. A finding left open is a
strict xfail naming it (it fails the suite once fixed, so the mark goes).
"""
import numpy as np
import pytest

import d2s
from d2s import static
from d2s.convert.api import convert_function
from d2s.jit import to_static


def _grads(fn, *arrays):
    """fn's output and the gradients of its summed floating outputs (eager Tensors in)."""
    ts = [d2s.to_tensor(a.copy(), stop_gradient=False) for a in arrays]
    out = fn(*ts)
    leaves = out if isinstance(out, tuple) else (out,)
    loss = None
    for leaf in leaves:
        term = leaf.sum()
        loss = term if loss is None else loss + term
    loss.backward()
    return ([leaf.numpy() for leaf in leaves],
            [np.zeros_like(a) if t.grad is None else t.grad.numpy() for a, t in zip(arrays, ts)])


def _ops(sf, *arrays):
    prog = sf.get_concrete_program(*(d2s.to_tensor(a) for a in arrays)).main_program
    return {op.type for op in prog.all_ops()}


# ---- a branch returning an outer Variable unchanged on both paths ---------------

def _passes_y_through_an_if(x, y):
    # Found as `if t: for j in range(0): y = ...`: both branches hand out y as
    # it was, so `cond` listed y twice among its inputs and its gradient doubled.
    if x.sum() > 0:
        y = y
    return y * 3.0


def test_a_variable_both_branches_pass_through_gets_its_gradient_once(each_executor):
    sf = to_static(_passes_y_through_an_if)
    for xv in ([1.0, 2.0], [-1.0, -2.0]):
        x, y = np.array(xv), np.array([0.5, -1.5])
        (out,), (gx, gy) = _grads(sf, x, y)
        np.testing.assert_array_equal(out, y * 3.0)
        np.testing.assert_array_equal(gy, [3.0, 3.0])  # d(sum(3y))/dy
        np.testing.assert_array_equal(gx, [0.0, 0.0])
        (e_out,), (e_gx, e_gy) = _grads(_passes_y_through_an_if, x, y)
        np.testing.assert_array_equal(gy, e_gy)
    assert "cond" in _ops(sf, x, y)


def test_static_cond_of_one_variable_on_both_sides_has_one_input():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [2], "float64")
        y = static.data("y", [2], "float64")
        y.stop_gradient = False
        out = static.nn.cond(x.sum() > 0, lambda: y, lambda: y)
        gy, = static.gradients([(out * 2.0).sum()], [y])
    cond_op = next(op for op in prog.global_block().ops if op.type == "cond")
    assert sum(v is y for v in cond_op.inputs) == 1
    for xv in ([1.0, 1.0], [-1.0, -1.0]):
        got, = static.Executor().run(prog, feed={"x": np.array(xv), "y": np.ones(2)},
                                     fetch_list=[gy])
        np.testing.assert_array_equal(got, [2.0, 2.0])


# ---- `:=` in the operand of `and`/`or` (or a ternary's test) evaluated first -----

def _walrus_first_in_and(x):
    z = x * 0
    if (z := x * -1.5).sum() > -1.5 and x.sum() > -2.0:
        x = x * 2
    return x + z


def _walrus_in_ternary_test(x):
    z = x * 0
    y = x * 3 if (z := x * 2).sum() > 0 else x
    return y + z


def _ref_walrus_first_in_and(x):
    z = x * -1.5
    return (x * 2 if z.sum() > -1.5 and x.sum() > -2.0 else x) + z


@pytest.mark.parametrize("fn, ref", [
    (_walrus_first_in_and, _ref_walrus_first_in_and),
    (_walrus_in_ternary_test, lambda x: (x * 3 if (x * 2).sum() > 0 else x) + x * 2),
])
def test_walrus_in_the_operand_evaluated_first_is_converted(fn, ref, each_executor):
    # Was left as Python `and` / ternary: bool() of a Variable, a TypeError.
    sf = to_static(fn)
    for v in (-1.0, 0.5, 1.0):
        x = np.array([v, v, v])
        (out,), (gx,) = _grads(sf, x)
        np.testing.assert_allclose(out, ref(x))
        (_, ), (e_gx,) = _grads(fn, x)
        np.testing.assert_allclose(gx, e_gx)
        np.testing.assert_allclose(fn(x), ref(x))  # the same source on numpy: Python
    assert "cond" in _ops(sf, x)


def _walrus_on_the_lazy_side(x):
    z = x * 0
    if x.sum() > 0 and (z := x * 2).sum() > 1:
        x = x + 1
    return x + z


def _walrus_in_a_ternary_branch(x):
    z = x * 0
    y = (z := x * 2) if x.sum() > 0 else x
    return y + z


@pytest.mark.parametrize("fn, construct", [(_walrus_on_the_lazy_side, "`and`/`or`"),
                                           (_walrus_in_a_ternary_branch,
                                            "a conditional expression")])
def test_walrus_on_a_path_taken_at_run_time_is_a_clear_error(fn, construct):
    sf = to_static(fn)
    with pytest.raises(static.ControlFlowError) as info:
        sf(d2s.to_tensor(np.array([1.0, 2.0])))
    text = str(info.value)
    assert construct in text and "'z'" in text and "test_fuzz_findings.py" in text
    assert len(sf.program_cache) == 0
    # numpy arrays and eager Tensors keep Python semantics: no error.
    converted = convert_function(fn)[0]
    for v in (2.0, -2.0, 0.25):
        np.testing.assert_array_equal(converted(np.array([v])), fn(np.array([v])))
        t = d2s.to_tensor(np.array([v]))
        np.testing.assert_array_equal(converted(t).numpy(), fn(t).numpy())


# ---- `:=` in a `while` test, and the loop left by break / return -----------------

def _walrus_while_break(x, k):
    while (y := x * 2 + 1).sum() < k:
        x = y * 0.5
        if x.sum() > 3:
            break
    return x, y


def _walrus_while_return(x, k):
    while (y := x * 2 + 1).sum() < k:
        x = y * 0.5
        if x.sum() > 3:
            return x * 10, y
    return x, y


def _walrus_while_continue_break_else(x, k):
    n = x * 0
    while (y := x + 1).sum() < k:
        x = y
        if x.sum() > 2:
            n = n + 1
            continue
        if x.sum() > 100:
            break
    else:
        n = n - 100
    return x, y, n


_WALRUS_WHILE = [_walrus_while_break, _walrus_while_return, _walrus_while_continue_break_else]


@pytest.mark.parametrize("fn", _WALRUS_WHILE)
def test_walrus_in_while_test_with_break_or_return_in_the_body(fn, each_executor):
    # The break flag was folded as `not brk and (y := ...)`: the binding moved
    # into a lazy operand (a TypeError). Now the test runs as statements.
    sf = to_static(fn)
    for xv, kv in ((0.5, 20.0), (0.1, 100.0), (5.0, 1.0), (0.1, 8.0)):
        x, k = np.array([xv, xv]), np.array(kv)
        ref = fn(x, kv)  # numpy arrays and a float: the original as plain Python
        got, g_grads = _grads(lambda x: sf(x, d2s.to_tensor(k)), x)
        want, e_grads = _grads(lambda x: fn(x, d2s.to_tensor(k)), x)
        for g, w, r in zip(got, want, ref):
            np.testing.assert_allclose(g, w)
            np.testing.assert_allclose(g, r)
        np.testing.assert_allclose(g_grads[0], e_grads[0])
        converted = convert_function(fn)[0]
        for g, r in zip(converted(x, kv), ref):  # the converted code on Python values
            np.testing.assert_array_equal(g, r)
    assert "while" in _ops(sf, x, k)


# ---- a name first assigned in one branch of a tensor `if` inside a tensor loop ---

def _inner_loop_in_a_branch_of_a_loop(x, n):
    # i exists only where the `if` ran its body: the outer loop cannot carry
    # it, and no longer refuses to build (the eager answer when i is not read
    # outside the branch).
    for r in x:
        if x.sum() < 100:
            for i in range(n):
                x = x + i
            x = x + i * 0.5
    return x


def _continue_then_inner_loop(x, n):
    for r in x:
        if x.sum() > 100:
            continue
        for i in range(n):
            x = x + i
        x = x + i
    return x


def _ref_inner_loop_in_a_branch(x, n, half):
    for _ in range(len(x)):
        if x.sum() < 100:
            x = x + sum(range(n)) + (n - 1) * (0.5 if half else 1.0)
    return x


@pytest.mark.parametrize("fn, half", [(_inner_loop_in_a_branch_of_a_loop, True),
                                      (_continue_then_inner_loop, False)])
def test_name_assigned_by_an_inner_loop_in_a_branch_of_a_tensor_loop(fn, half, each_executor):
    sf = to_static(fn)
    x = np.array([1.0, 2.0])
    for nv in (1, 3):
        got = sf(d2s.to_tensor(x), d2s.to_tensor(np.array(nv)))
        want = fn(d2s.to_tensor(x), d2s.to_tensor(np.array(nv)))
        np.testing.assert_allclose(got.numpy(), want.numpy())
        np.testing.assert_allclose(got.numpy(), _ref_inner_loop_in_a_branch(x, nv, half))
    # zero trips: the read after the inner loop is Python's NameError, at run time
    with pytest.raises(NameError, match="'i'"):
        sf(d2s.to_tensor(x), d2s.to_tensor(np.array(0)))
    assert {"while", "cond"} <= _ops(sf, x, np.array(1))


def _inner_loop_in_a_branch_read_after_the_loop(x, n):
    for r in x:
        if x.sum() < 100:
            for i in range(n):
                x = x + i
    return x + i


def test_reading_that_name_after_the_loop_is_the_one_branch_error():
    sf = to_static(_inner_loop_in_a_branch_read_after_the_loop)
    with pytest.raises(NameError, match=r"'i'.*only one branch of an `if` on a tensor"):
        sf(d2s.to_tensor(np.array([1.0, 2.0])), d2s.to_tensor(np.array(2)))
    assert len(sf.program_cache) == 0


# ---- a Python loop that ran zero times, its target read on a path not taken -----

def _zero_trip_python_loop_read_on_a_skipped_path(x, n):
    if x.sum() > 0:
        return x
    for i in range(n):
        x = x + 1
    return x + i


def _zero_trip_target_read_in_a_tensor_loop_body(x, n, k):
    for i in range(n):
        x = x * 2
    while x.sum() < k:  # the body reads i whenever it runs
        x = x + i
    return x


def _zero_trip_target_read_on_both_paths_of_an_inner_if(x, n):
    for i in range(n):
        x = x * 2
    if x.sum() > 0:
        if x.mean() > 1.0:  # both paths read i: the outer path raises
            y = x + i
        else:
            y = x - i
        return y
    return x - 1.0


def _zero_trip_target_read_in_a_ternary(x, n):
    for i in range(n):
        x = x * 2
    return x + i if x.sum() > 0 else x * 3.0


_SKIPPED_READS = [
    (_zero_trip_python_loop_read_on_a_skipped_path, ()),
    (_zero_trip_target_read_in_a_tensor_loop_body, (np.array(1.0),)),
    (_zero_trip_target_read_on_both_paths_of_an_inner_if, ()),
    (_zero_trip_target_read_in_a_ternary, ()),
]


def _eager_or_error(fn, *args):
    try:
        return fn(*args), None
    except NameError as e:
        return None, e


@pytest.mark.parametrize("fn, extra", _SKIPPED_READS)
def test_python_zero_trip_loop_target_read_on_a_path_not_taken(fn, extra, each_executor):
    # Was a build-time UnboundLocalError: both paths are traced, and the read
    # raised while tracing the one the run never takes. Now the path that
    # reads it raises when (and only when) it runs, as eager does.
    sf = to_static(fn)
    tensors = [d2s.to_tensor(a) for a in extra]
    for n in (0, 2):  # a Python int: the loop is unrolled while tracing
        for v in (1.0, 0.2, -1.0):
            x = np.array([v, 2 * v])
            want, error = _eager_or_error(fn, d2s.to_tensor(x), n, *tensors)
            if error is not None:
                assert n == 0
                with pytest.raises(NameError, match="'i'") as info:
                    sf(d2s.to_tensor(x), n, *tensors)
                assert "test_fuzz_findings.py" in str(info.value)  # the line of the read
                continue
            (got,), (gx,) = _grads(lambda x: sf(x, n, *tensors), x)
            (ref,), (e_gx,) = _grads(lambda x: fn(x, n, *tensors), x)
            np.testing.assert_array_equal(got, want.numpy())
            np.testing.assert_array_equal(got, ref)
            np.testing.assert_array_equal(gx, e_gx)
    # the path that reads it holds an op raising the read's error
    prog = sf.get_concrete_program(d2s.to_tensor(x), 0, *tensors).main_program
    raises = [op for op in prog.all_ops() if op.type == "raise"]
    assert raises and all(op.attrs["exception"] is UnboundLocalError for op in raises)
    assert ("while" if extra else "cond") in {op.type for op in prog.all_ops()}


@pytest.mark.parametrize("fn, extra", _SKIPPED_READS)
def test_the_same_functions_keep_python_semantics_on_python_values(fn, extra):
    converted = convert_function(fn)[0]
    extra = [float(a) for a in extra]
    for n in (0, 2):
        for v in (1.0, 0.2, -1.0):
            x = np.array([v, 2 * v])
            want, error = _eager_or_error(fn, x, n, *extra)
            if error is not None:
                with pytest.raises(UnboundLocalError, match="'i'"):
                    converted(x, n, *extra)
            else:
                np.testing.assert_array_equal(converted(x, n, *extra), want)


def test_a_tensor_loop_bound_gives_the_same_run_time_error():
    sf = to_static(_zero_trip_python_loop_read_on_a_skipped_path)
    x = np.array([-1.0, -2.0])
    with pytest.raises(NameError, match="'i'"):
        sf(d2s.to_tensor(x), d2s.to_tensor(np.array(0)))
    got = sf(d2s.to_tensor(x), d2s.to_tensor(np.array(2)))
    np.testing.assert_array_equal(got.numpy(), x + 2 + 1)
    np.testing.assert_array_equal(sf(d2s.to_tensor(-x), d2s.to_tensor(np.array(0))).numpy(), -x)


def _zero_trip_target_read_on_every_path(x, n):
    for i in range(n):
        x = x * 2
    if x.sum() > 0:
        y = x + i
    else:
        y = x - i
    return y


def test_a_read_on_every_path_is_still_the_build_time_error():
    # Every run reads it (eager raises for every input): no program is built.
    sf = to_static(_zero_trip_target_read_on_every_path)
    with pytest.raises(UnboundLocalError, match="'i'"):
        sf(d2s.to_tensor(np.array([1.0])), 0)
    assert len(sf.program_cache) == 0
    np.testing.assert_array_equal(sf(d2s.to_tensor(np.array([1.0])), 1).numpy(), [2.0])


def _read_of_a_name_one_branch_assigned(x):
    if x.sum() > 0:
        y = x * 2
    if x.mean() > 0.5:
        return x + y
    return x


def test_a_name_some_run_may_assign_is_still_the_one_branch_error():
    # `y` is not surely unassigned (a run that takes the first branch has it):
    # the read stays the build-time error DESIGN §4 asks for.
    sf = to_static(_read_of_a_name_one_branch_assigned)
    with pytest.raises(NameError, match=r"'y'.*only one branch of an `if` on a tensor"):
        sf(d2s.to_tensor(np.array([1.0])))
    assert len(sf.program_cache) == 0


# ---- a Python number returned from a loop, promoted by a later return -----------

def _number_returned_from_a_loop_then_promoted(x, n):
    for i in range(n):
        if x.sum() < 0:
            return x * 2, 1
    if x.sum() > 0:
        return x * 3, x.sum()
    return x * 4, x.mean()


def test_python_number_returned_from_a_loop_and_promoted_by_a_later_return(each_executor):
    # The path passing the loop's (weak int64) number on casts it to float64;
    # that cast of the still-undefined value raised NameError when the loop had
    # not returned. A cast is no read: it stays undefined (`cast_if_defined`).
    sf = to_static(_number_returned_from_a_loop_then_promoted)
    for xv in ([1.0, -1.0], [1.0, 2.0], [-1.0, -2.0]):
        for nv in (0, 2):
            x = np.array(xv)
            got = sf(d2s.to_tensor(x), d2s.to_tensor(np.array(nv)))
            want = _number_returned_from_a_loop_then_promoted(d2s.to_tensor(x), nv)
            np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
            assert got[0].dtype == want[0].dtype == np.float64
            # eager returns the Python int 1 (static: float64, the branch-output rule)
            assert float(got[1]) == float(want[1]) and got[1].dtype == np.float64
            ref = (x * 2, 1) if nv and x.sum() < 0 else \
                (x * 3, x.sum()) if x.sum() > 0 else (x * 4, x.mean())
            np.testing.assert_array_equal(got[0].numpy(), ref[0])
            assert float(got[1]) == ref[1]
    assert {"while", "cond", "cast_if_defined"} <= _ops(sf, x, np.array(2))


def test_the_promoted_number_keeps_python_semantics_on_python_values():
    converted = convert_function(_number_returned_from_a_loop_then_promoted)[0]
    for xv in ([1.0, -1.0], [1.0, 2.0], [-1.0, -2.0]):
        for nv in (0, 2):
            x = np.array(xv)
            got = converted(x, nv)
            want = _number_returned_from_a_loop_then_promoted(x, nv)
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1] == want[1] and type(got[1]) is type(want[1])


# ---- a zero-trip loop's target read in dead code ---------------------------------

def _zero_trip_read_in_dead_code(x, n):
    for i in range(n):
        x = x + 1
    y = x + i  # never used: the static program used to prune it
    return x


def _zero_trip_read_in_dead_code_of_a_branch(x, n):
    for i in range(n):
        x = x + 1
    if x.sum() > 0:
        y = x * i  # never used
    return x * 2.0


@pytest.mark.parametrize("fn, ref", [(_zero_trip_read_in_dead_code, lambda x, n: x + n),
                                     (_zero_trip_read_in_dead_code_of_a_branch,
                                      lambda x, n: (x + n) * 2.0)])
def test_zero_trip_loop_target_read_in_dead_code_still_raises(fn, ref, each_executor):
    # DCE pruned the read, and with it the NameError: an op reading a value that
    # may be undefined is now kept (a side effect), as eager raises there.
    sf = to_static(fn)
    for v in (1.0, -5.0):
        x = np.array([v])
        want, error = _eager_or_error(fn, d2s.to_tensor(x), d2s.to_tensor(np.array(0)))
        if error is None:
            np.testing.assert_array_equal(sf(d2s.to_tensor(x), d2s.to_tensor(np.array(0)))
                                          .numpy(), want.numpy())
        else:
            with pytest.raises(NameError, match="'i'"):
                sf(d2s.to_tensor(x), d2s.to_tensor(np.array(0)))
        for n in (1, 3):
            got = sf(d2s.to_tensor(x), d2s.to_tensor(np.array(n)))
            np.testing.assert_array_equal(got.numpy(), ref(x, n))
            np.testing.assert_array_equal(
                got.numpy(), fn(d2s.to_tensor(x), d2s.to_tensor(np.array(n))).numpy())
    assert "while" in _ops(sf, x, np.array(1))
    with pytest.raises(UnboundLocalError, match="'i'"):  # Python values: Python's error
        convert_function(fn)[0](np.array([1.0]), 0)


def test_a_saved_program_keeps_the_read(tmp_path):
    sf = to_static(_zero_trip_read_in_dead_code)
    spec = [static.InputSpec([1], "float64"), static.InputSpec([], "int64")]
    d2s.jit.save(sf, str(tmp_path / "m"), input_spec=spec)
    loaded = d2s.jit.load(str(tmp_path / "m"))
    np.testing.assert_array_equal(
        loaded(d2s.to_tensor(np.array([1.0])), d2s.to_tensor(np.array(2))).numpy(), [3.0])
    with pytest.raises(NameError, match="'i'"):
        loaded(d2s.to_tensor(np.array([1.0])), d2s.to_tensor(np.array(0)))


def _dead_code_with_every_value_defined(x, n):
    i = 0
    for i in range(n):
        x = x + 1
    y = x + i  # never used, and `i` always has a value: pruned
    return x


def test_dead_code_reading_only_defined_values_is_still_pruned():
    prog = to_static(_dead_code_with_every_value_defined).get_concrete_program(
        d2s.to_tensor(np.array([1.0])), d2s.to_tensor(np.array(2))).main_program
    after_loop = prog.global_block().ops[-1]
    assert after_loop.type == "while"  # the `x + i` after it is gone
