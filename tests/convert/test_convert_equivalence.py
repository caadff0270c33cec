"""Converted functions behave exactly like the originals on Python inputs."""
import copy

import pytest

from d2s.convert import convert_function
from convert_cases import CASES


def _run(fn, args, capsys=None):
    args = copy.deepcopy(args)
    try:
        result = ("ok", fn(*args))
    except Exception as exc:  # compared by type (messages may carry a location)
        result = ("raised", type(exc))
    return result, args


@pytest.mark.parametrize("fn,inputs", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_converted_equals_original(fn, inputs, capsys):
    converted, source = convert_function(fn)
    assert "_jst." in source or "def " in source
    for args in inputs:
        expected = _run(fn, args)
        expected_out = capsys.readouterr().out
        actual = _run(converted, args)
        actual_out = capsys.readouterr().out
        assert actual == expected, f"{fn.__name__}{args}"
        assert actual_out == expected_out


def test_table_is_large():
    assert len(CASES) >= 60


def test_zero_trip_name_error_names_variable():
    from convert_cases import zero_trip_loop_name_error
    converted, _ = convert_function(zero_trip_loop_name_error)
    with pytest.raises(NameError, match="'last'"):
        converted(0)


def test_one_branch_only_name_error_names_variable():
    from convert_cases import if_defines_in_one_branch_only
    converted, _ = convert_function(if_defines_in_one_branch_only)
    with pytest.raises(UnboundLocalError, match="'z'"):
        converted(False)
