"""A name a nested function declares `nonlocal` and writes under a tensor
`if` or loop reaches the caller (the write is live after the construct even
when the nested function ends there).

Each case runs eagerly and under `to_static` on the same inputs: tensor
values build the static construct, Python values keep plain Python semantics.
"""

import pytest

from d2s.jit import to_static

from model_code_helpers import assert_same_run, program_ops, tensor


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
