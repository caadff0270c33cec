"""What the messages say when a tensor condition meets what a program cannot
hold: two different strings from the branches of a tensor `if` are named by
their values; recursion stopped by a tensor condition says the trace
follows both paths and to write a `while` loop.
"""

import numpy as np
import pytest

from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import assert_same, tensor


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
                                               r"test_tensor_condition_messages\.py"):
        to_static(_tag_under_tensor_if)(tensor([1.0]))
    assert to_static(_tag_under_tensor_if)(np.float32(1.0))[1] == "positive"


def _doubled_until_large(x):
    if x.sum() > 10.0:
        return x
    return _doubled_until_large(x * 2.0)


def test_recursion_stopped_by_a_tensor_condition_says_why_it_never_ends():
    assert_same(_doubled_until_large(tensor([1.0, 2.0])), tensor([4.0, 8.0]))
    with pytest.raises(RecursionError, match=r"(?s)while tracing a branch of an `if` on a "
                                             r"tensor \(.*test_tensor_condition_messages\.py, line \d+\)"
                                             r".*`while` loop"):
        to_static(_doubled_until_large)(tensor([1.0, 2.0]))
    # and the next build starts clean: a Python-valued run still works
    assert to_static(_doubled_until_large)(np.float32(20.0)) == 20.0
