"""Generated code per converter: the exact names passed to the runtime."""
import ast
import re
import textwrap

import pytest

from d2s.convert.origin import annotate_origins
from d2s.convert.pipeline import convert_tree
from d2s.convert.code_text import ast_to_source


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
                xs.sort()
            return xs
    """))
    assert "(), ())" in src and "return ()" in src


def test_ifelse_list_append_is_an_output():
    # An append in a branch rebinds the list (a tensor `if` carries it as an
    # array): never an in-place change the other branch would see.
    src = _flat(convert_src("""
        def f(c, xs):
            if c:
                xs.append(1)
            return xs
    """))
    assert "xs = _jst.convert_list_append(xs, 1, outer='xs')" in src
    assert "('xs',), ('xs',), lists=('xs',))" in src


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


def _converted_with(steps, fn):
    """`fn` converted by `steps` (pipeline steps); its text and statement origins."""
    from d2s.convert import pipeline
    from d2s.convert.naming import Namer
    from d2s.convert.origin import ORIGIN
    from d2s.convert.source import parse_function
    from d2s.convert.traversal import walk
    parsed = parse_function(fn)
    node, nodes = parsed.node, walk(parsed.node)
    annotate_origins(node, parsed.filename, parsed.line_offset, parsed.source_lines,
                     fn.__name__, nodes=nodes)
    ctx = pipeline.Context(Namer.for_tree(node, pipeline.CLOSURE_ROLES, nodes),
                           parsed.filename, fn.__qualname__, nodes)
    for step in steps:
        node = step.transform(node, ctx)
    return ast_to_source(node), [(type(stmt), getattr(stmt, ORIGIN, None))
                                 for stmt in walk(node) if isinstance(stmt, ast.stmt)]


def test_fused_walks_give_the_code_of_the_converters_one_by_one():
    # The pipeline fuses builtin_calls, call_trees and the expression
    # converters into one walk (list_append moved ahead of them): the code
    # and its line origins must be those of the converters run one by one,
    # in the order the fusion replaced.
    import types

    import convert_cases
    import fused_cases
    from d2s.convert import pipeline
    from d2s.convert.transformers import (builtin_calls, call_trees,
                                          conditional_expressions, list_append,
                                          logical_expressions)
    fused = pipeline.PIPELINE
    at = fused.index(pipeline._CallsAndExpressions)
    one_by_one = (fused[:at - 1] + [builtin_calls, list_append, call_trees,
                                    logical_expressions, conditional_expressions]
                  + fused[at + 1:])
    assert fused[at - 1] is list_append and len(one_by_one) == len(fused) + 3
    functions = [fn for fn, _ in convert_cases.CASES]
    functions += [v for v in vars(fused_cases).values() if isinstance(v, types.FunctionType)]
    functions += [fused_cases.Child.forward]
    for fn in functions:
        assert _converted_with(fused, fn) == _converted_with(one_by_one, fn), fn.__name__
    text = _flat(_converted_with(fused, fused_cases.nested_defs)[0])
    # Definition-time parts: builtins routed, calls not wrapped; a callee
    # that is an `and` is converted, then its call wrapped.
    assert "@functools.lru_cache(maxsize=_jst.convert_len(xs))" in text
    assert "def g(a=_jst.convert_len(xs), b: print=None) ->len:" in text
    assert "_jst.convert_call(_jst.convert_logical_and(g, lambda : deco))(out" in text
