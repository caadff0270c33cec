"""Names a loop may leave unassigned: a name an inner loop assigns in a
branch of a tensor loop, a Python loop's target read on a path a zero-trip
loop would skip (a run-time error only when the path is taken, as eagerly;
a read on every path stays the build-time error), dead code reading such a
name (kept in saved programs), and dead code reading only defined values
(still pruned). Static == eager == numpy on both executors; the same
functions on Python values keep Python's semantics.
"""

import numpy as np
import pytest

import d2s
from d2s import static
from d2s.convert.api import convert_function
from d2s.jit import to_static

from model_code_helpers import outputs_and_grads, op_types


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
    assert {"while", "cond"} <= op_types(sf, x, np.array(1))


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
                assert "test_loop_targets_and_skipped_reads.py" in str(info.value)  # the line of the read
                continue
            (got,), (gx,) = outputs_and_grads(lambda x: sf(x, n, *tensors), x)
            (ref,), (e_gx,) = outputs_and_grads(lambda x: fn(x, n, *tensors), x)
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
    assert "while" in op_types(sf, x, np.array(1))
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
