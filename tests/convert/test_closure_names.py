"""Closures a construct defines and calls at once reuse one name per role, so
that one scope binds few names (compile time grows with them)."""
import re

import numpy as np

import d2s
from d2s.convert import convert_function
from d2s.convert.naming import Namer
from d2s.jit import to_static


def sequential_and_nested(x, n):
    if x > 0:
        x = x - 1
    else:
        x = x + 1
    while n > 0:
        if x > 2:
            x = x / 2
        n = n - 1
    if x < 1:
        if x < 0:
            x = -x
        else:
            x = x + 0.5
    for i in range(3):
        x = x + i
    return x


def test_each_role_has_one_name_reused_by_every_construct():
    _, code = convert_function(sequential_and_nested)
    defined = re.findall(r"def (__\w+)\(", str(code))
    assert defined.count("__true_fn_0") == 4      # four `if`s, at several depths
    assert {name for name in defined if name.startswith("__true_fn")} == {"__true_fn_0"}
    assert {name for name in defined if name.startswith("__get_state")} == {"__get_state_0"}


def test_reused_names_keep_python_and_tensor_semantics():
    converted, _ = convert_function(sequential_and_nested)
    for x, n in [(5.0, 3), (-4.0, 1), (0.2, 0), (3.0, 2)]:
        assert converted(x, n) == sequential_and_nested(x, n)
    static = to_static(sequential_and_nested)
    for x, n in [(5.0, 3), (-4.0, 1), (0.2, 0)]:
        out = static(d2s.to_tensor(np.float64(x)), d2s.to_tensor(np.int64(n)))
        np.testing.assert_allclose(out.numpy(), sequential_and_nested(x, n))
    program = static.get_concrete_program(d2s.to_tensor(np.float64(1.0)),
                                          d2s.to_tensor(np.int64(2))).main_program
    kinds = {op.type for block in program.blocks for op in block.ops}
    assert {"cond", "while"} <= kinds


def test_namer_reuses_only_the_roles_named():
    namer = Namer({"__true_fn_0"}, reused=("true_fn",))
    assert namer.new("true_fn") == namer.new("true_fn") == "__true_fn_1"
    assert namer.new("vals") != namer.new("vals")
