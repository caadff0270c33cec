"""Early returns under tensor predicates: promotion, structure errors, roles.

Values are checked against numpy; the conversion table has the eager-vs-static
rows (tests/jit/test_conversion_table.py, "return inside converted if / loop").
"""
import numpy as np
import pytest

import d2s
from d2s import static
from d2s.convert import runtime as jst
from d2s.jit import to_static


def _zero_or_double(x):
    if x.sum() > 0:
        return 0
    return x * 2


@pytest.mark.parametrize("values", [[1.0, 2.0], [-1.0, -2.0]])
def test_python_zero_is_promoted_to_the_other_paths_tensor(values):
    # The branch-output rule: the number takes the tensor's shape and (weakly) dtype.
    x = np.array(values, np.float32)
    out = to_static(_zero_or_double)(d2s.to_tensor(x))
    want = np.zeros_like(x) if x.sum() > 0 else x * 2
    assert out.dtype == np.float32 and out.shape == (2,)
    np.testing.assert_array_equal(out.numpy(), want)


def _tuple_or_single(x):
    if x > 0:
        return x, x
    return x


def test_a_structure_error_is_raised_at_build_time_and_not_cached():
    sf = to_static(_tuple_or_single)
    for _ in range(2):  # the same clear error again: nothing half-built was kept
        with pytest.raises(static.ControlFlowError,
                           match=r"'_tuple_or_single' \(return at lines \d+, \d+\)") as info:
            sf(d2s.to_tensor(np.float64(1.0)))
        assert "test_returns.py" in str(info.value)
    assert len(sf.program_cache) == 0
    assert sf(1.0) == (1.0, 1.0) and sf(-1.0) == -1.0  # Python values: Python semantics


def _early_return_state(x):
    """The state functions converted code makes for an early return, its names
    held in closure cells as converted code holds them (a dict here would be a
    container the branch writes items of: runtime.loop_items would carry
    those too)."""
    done, result = False, jst.UndefinedVar("result")

    def get_state():
        return done, result

    def set_state(values):
        nonlocal done, result
        done, result = values

    def returns_early():
        nonlocal done, result
        done, result = True, x * 2

    return get_state, set_state, returns_early


def test_return_slots_are_roles_not_spellings():
    """The runtime learns which state names hold the return flag and value from
    ReturnSlots: any spelling works, and the value one branch leaves unset is
    no error (it is read only where the flag is set)."""
    prog = static.Program()
    names = ("done", "result")
    with static.program_guard(prog):
        x = static.data("x", [], "float64")
        get_state, set_state, returns_early = _early_return_state(x)
        jst.convert_ifelse(x > 0, returns_early, lambda: None, get_state, set_state, names,
                           names, returns=jst.ReturnSlots("done", "result", "the result"))
        done, result = get_state()
        assert isinstance(result, static.Variable)
    exe = static.Executor()
    got = exe.run(prog, feed={"x": np.float64(3.0)}, fetch_list=[done, result])
    assert bool(got[0]) and float(got[1]) == 6.0
    assert not bool(exe.run(prog, feed={"x": np.float64(-3.0)}, fetch_list=[done])[0])

    with static.program_guard(static.Program()):
        x = static.data("x", [], "float64")
        get_state, set_state, returns_early = _early_return_state(x)
        # Without the roles, a value set in one branch only is undefined after the `if`.
        jst.convert_ifelse(x > 0, returns_early, lambda: None, get_state, set_state, names,
                           names)
        with pytest.raises(NameError, match="'result'"):
            jst.ld(get_state()[1])


def _tensor_or_zero(x):
    if x.sum() > 0:
        return x
    return 0


def test_python_number_against_an_early_return_of_unknown_shape_is_a_clear_error():
    # Known dims: the number takes the tensor's shape (no run-time read of it).
    out = to_static(_tensor_or_zero)(d2s.to_tensor(np.array([-1.0, -2.0])))
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.0])
    # Unknown dims: on the number's path the tensor does not exist to give a shape.
    sf = to_static(_tensor_or_zero, input_spec=[static.InputSpec([None], "float64")])
    with pytest.raises(static.ControlFlowError,
                       match=r"returned by '_tensor_or_zero'.*Python number 0.*\[None\]"):
        sf(d2s.to_tensor(np.array([-1.0, -2.0])))
