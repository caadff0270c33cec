"""The converter pipeline as a whole (`d2s/convert/pipeline.py`): every
converter reaches nested functions, generated statements carry the user's
line, and the fused walk (builtin_calls, call_trees and the expression
converters in one traversal) writes the code of the converters run one by
one."""
import ast
import textwrap

from converter_helpers import convert_src, flat

from d2s.convert.code_text import ast_to_source
from d2s.convert.origin import annotate_origins
from d2s.convert.pipeline import convert_tree


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
    text = flat(_converted_with(fused, fused_cases.nested_defs)[0])
    # Definition-time parts: builtins routed, calls not wrapped; a callee
    # that is an `and` is converted, then its call wrapped.
    assert "@functools.lru_cache(maxsize=_jst.convert_len(xs))" in text
    assert "def g(a=_jst.convert_len(xs), b: print=None) ->len:" in text
    assert "_jst.convert_call(_jst.convert_logical_and(g, lambda : deco, True))(out" in text
