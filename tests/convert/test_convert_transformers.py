"""Generated code per converter: the exact names passed to the runtime."""
import ast
import re
import textwrap

import pytest

from d2s.convert.origin import annotate_origins
from d2s.convert.pipeline import convert_tree
from d2s.convert.printing import ast_to_source


def convert_src(src):
    node = ast.parse(textwrap.dedent(src)).body[0]
    annotate_origins(node, "<test>", 0, textwrap.dedent(src).splitlines(), node.name)
    return ast_to_source(convert_tree(node, "<test>", node.name))


def _flat(src):
    return re.sub(r"\(\s+", "(", re.sub(r"\s+", " ", src))


def test_ifelse_state_and_exact_outputs():
    src = _flat(convert_src("""
        def f(c):
            x = 0
            if c:
                x = 1
                tmp = 2
                y = tmp
            else:
                y = 3
            return x + y
    """))
    assert "('tmp', 'x', 'y'), ('x', 'y'))" in src
    assert "nonlocal tmp, x, y" in src


def test_ifelse_zero_outputs():
    src = _flat(convert_src("""
        def f(c, xs):
            if c:
                xs.append(1)
            return xs
    """))
    assert "(), ())" in src and "return ()" in src


def test_while_loop_vars_exact():
    src = _flat(convert_src("""
        def f(n):
            i = 0
            s = 0
            while i < n:
                t = i * 2
                s = s + t
                i = i + 1
            return s
    """))
    assert "('i', 's', 't'), ('i', 's'))" in src


def test_for_target_and_break_flag():
    src = _flat(convert_src("""
        def f(xs):
            for i, (a, b) in enumerate(xs):
                if a:
                    break
            return i
    """))
    assert "i, (a, b) = __item_0" in src
    assert "_jst.convert_enumerate(xs)" in src
    assert "lambda : _jst.convert_logical_not(__break_0)" in src
    assert "('__break_0', 'i'), lambda" in src  # a, b not live after the loop
    assert "i = _jst.UndefinedVar('i')" in src
    assert "return _jst.ld(i)" in src


def test_while_break_folded_into_condition():
    src = _flat(convert_src("""
        def f(n):
            while n > 0:
                if n == 3:
                    break
                n -= 1
            return n
    """))
    assert ("_jst.convert_logical_and(_jst.convert_logical_not(__break_0), lambda : n > 0)"
            in src)


def test_return_single_exit():
    src = convert_src("""
        def f(x):
            if x:
                return 1
            return 2
    """)
    assert src.count("return _jst.return_value(__ret_val_0)") == 1
    assert "__ret_flag_0 = True" in src


def test_return_roles_are_passed_to_the_runtime_not_spelled():
    src = _flat(convert_src("""
        def f(x):
            y = 0
            if x:
                return 1
            y = x * 2
    """))
    slots = ("returns=_jst.ReturnSlots('__ret_flag_0', '__ret_val_0', \"the value returned "
             "by 'f' (return at line 5 and None at its end)\")")
    assert src.count(slots) == 2  # the `if x` and the `if not __ret_flag_0` guard
    assert "__ret_val_0 = None" in src  # falling off the end returns None


def test_no_none_at_the_end_when_every_path_returns():
    src = convert_src("""
        def f(x):
            if x:
                return 1
            while True:
                if x:
                    return 2
    """)
    assert "__ret_val_0 = None" not in src


def test_logical_and_compare_chain():
    src = _flat(convert_src("""
        def f(a, b, c):
            return (a and b or not c), a < b <= c
    """))
    assert ("_jst.convert_logical_or(_jst.convert_logical_and(a, lambda : b), "
            "lambda : _jst.convert_logical_not(c))") in src
    assert "_jst.convert_compare_chain(a, '<', lambda : b, '<=', lambda : c)" in src


def test_builtins_and_calls():
    src = _flat(convert_src("""
        def f(x, g):
            assert x, 'msg'
            print(len(x), x.shape)
            return g(x), isinstance(x, int), super
    """))
    assert "_jst.convert_assert(x, lambda : 'msg')" in src
    assert "_jst.convert_print(_jst.convert_len(x), _jst.convert_shape(x))" in src
    assert "_jst.convert_call(g)(x)" in src
    assert "isinstance(x, int)" in src and "convert_call(isinstance)" not in src


def test_rebound_builtin_left_alone():
    src = convert_src("""
        def f(x):
            len = lambda v: 0
            return len(x)
    """)
    assert "convert_len" not in src


def test_nested_def_converted():
    src = convert_src("""
        def f(x):
            def g(y):
                if y:
                    return 1
                return 2
            return g(x)
    """)
    assert "_jst.convert_ifelse" in src and "__ret_flag_0" in src


def test_ternary():
    src = _flat(convert_src("""
        def f(x):
            return 1 if x else 2
    """))
    assert "_jst.convert_ifelse_expr(x, lambda : 1, lambda : 2)" in src


def test_generated_nodes_carry_user_origin():
    node = ast.parse(textwrap.dedent("""
        def f(x):
            if x:
                y = 1
            else:
                y = 2
            return y
    """)).body[0]
    annotate_origins(node, "user.py", 10, ["", "def f(x):", "    if x:"], "f")
    convert_tree(node, "user.py", "f")
    call = [s for s in node.body if isinstance(s, ast.Expr)][0]
    assert call._d2s_origin.lineno == 13 and call._d2s_origin.filename == "user.py"
