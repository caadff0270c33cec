"""A conversion error leaving a converted function starts with the user's
file and line (`file.py:12: ...`, as compilers print them), once, with or
without D2S_FULL_TRACEBACK; the user's own exceptions keep their message."""
import inspect

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import ControlFlowError


def _alias_appended_under_tensor_if(x):
    a = []
    b = a
    if x.sum() > 0:  # the construct: where the error surfaces
        a.append(x)
    return b


def _nested(x):
    return _alias_appended_under_tensor_if(x) + [x]


def _raises_its_own(x):
    if x.sum() > 0:
        raise ValueError("the user's own message")
    return x


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _x():
    return d2s.to_tensor(np.ones(2, "float32"))


@pytest.mark.parametrize("full", ["", "1"])
@pytest.mark.parametrize("fn", [_alias_appended_under_tensor_if, _nested])
def test_a_conversion_error_starts_with_the_users_file_and_line(fn, full, monkeypatch):
    monkeypatch.setenv("D2S_FULL_TRACEBACK", full)
    with pytest.raises(ControlFlowError) as info:
        to_static(fn)(_x())
    line = _line_of(_alias_appended_under_tensor_if, "if x.sum() > 0")
    message = str(info.value)
    assert message.startswith(f"{__file__}:{line}: the list 'a' is appended to"), message
    assert message.count(f"{__file__}:{line}: ") == 1


def test_the_users_own_exception_keeps_its_message():
    with pytest.raises(ValueError) as info:
        to_static(_raises_its_own)(_x())
    # (a raise the program runs names the line it was built at, after the message)
    assert str(info.value).startswith("the user's own message")
