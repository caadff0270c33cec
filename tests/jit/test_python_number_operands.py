"""`d2s.where` / `clip` / `full_like` / `maximum` / `minimum` with Python
numbers give the eager dtype in the program too (a table over dtypes).
"""

import pytest

import d2s
from d2s.jit import to_static

from model_code_helpers import assert_same, tensor


_NUMBER_OPS = {
    "where(c, 0.5, 1.0)": lambda x: d2s.where(x > 0, 0.5, 1.0),
    "where(c, 1, 0)": lambda x: d2s.where(x > 0, 1, 0),
    "where(c, 1, 0.5)": lambda x: d2s.where(x > 0, 1, 0.5),
    "where(c, x, 0.5)": lambda x: d2s.where(x > 0, x, 0.5),
    "x * where(c, 0.5, 1.0)": lambda x: x * d2s.where(x > 0, 0.5, 1.0),
    "where(c, 0.5, 1.0) * 2.0": lambda x: d2s.where(x > 0, 0.5, 1.0) * 2.0,
    "where(c, 1, 0) + 0.5": lambda x: d2s.where(x > 0, 1, 0) + 0.5,
    "clip(x, 0.5, 1.0)": lambda x: d2s.clip(x, 0.5, 1.0),
    "full_like(x, 2.5)": lambda x: d2s.full_like(x, 2.5),
    "maximum(x, 0.5)": lambda x: d2s.maximum(x, 0.5),
    "minimum(x, 1)": lambda x: d2s.minimum(x, 1),
}


def _number_op_in_a_step(op, x):
    return op(x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("name", sorted(_NUMBER_OPS))
def test_python_number_operands_give_the_eager_dtype(name, dtype):
    op = _NUMBER_OPS[name]
    x = tensor([2, -1, 0], dtype=dtype)
    eager = op(x)
    static = to_static(_number_op_in_a_step)(op, x)
    assert_same(static, eager, what=f"{name} on {dtype}")
