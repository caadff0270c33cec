"""Templates, printing, source loading, error locations, unsupported syntax."""
import ast
import inspect
import sys

import pytest

from d2s.convert import (SourceUnavailableError, UnsupportedSyntaxError, convert_function,
                         rewrite_exception)
from d2s.convert import templates
from d2s.convert.naming import Namer
from d2s.convert.code_text import ast_to_source

THIS_FILE = __file__


# ---- templates and naming ------------------------------------------------------

def test_template_replaces_names_exprs_and_statement_lists():
    body = ast.parse("a = 1\nb = 2").body
    stmts = templates.replace(
        """
        def fn(arg):
            nonlocal names
            body
            return value + arg
        """,
        fn="my_fn", arg="x", names=["a", "b"], body=body,
        value=ast.parse("f(3)", mode="eval").body)
    src = ast_to_source(stmts)
    assert src.strip().splitlines() == [
        "def my_fn(x):", "    nonlocal a, b", "    a = 1", "    b = 2",
        "    return f(3) + x"]


def test_template_empty_nonlocal_removed_and_empty_body_gets_pass():
    stmts = templates.replace("def fn():\n    nonlocal names\n    body",
                              fn="g", names=[], body=[])
    assert ast_to_source(stmts).split() == ["def", "g():", "pass"]


def test_template_target_context_and_attribute_placeholder():
    target = ast.parse("(a, b)", mode="eval").body  # Load context as parsed
    stmts = templates.replace("target = _jst.helper(v)", target=target,
                              helper="convert_len", v="x")
    assert isinstance(stmts[0].targets[0].ctx, ast.Store)
    assert isinstance(stmts[0].targets[0].elts[0].ctx, ast.Store)
    assert ast_to_source(stmts).strip() == "a, b = _jst.convert_len(x)"
    expr = templates.replace_as_expression("lambda: body", body="y")
    assert isinstance(expr, ast.Lambda)


def test_template_parsed_once_yet_each_use_gets_its_own_nodes():
    # The parsed template is cached: a later use (other values, or changes
    # made to an earlier result) must never show through.
    template = "def fn():\n    nonlocal names\n    body\nfn.attr = value"
    first = templates.replace(template, fn="f1", names=["a"], body=ast.parse("a = 1").body,
                              value=ast.Constant(value=1))
    first[0].body.append(ast.parse("extra = 0").body[0])
    second = templates.replace(template, fn="f2", names=[], body=[], attr="other",
                               value=ast.Constant(value=2))
    assert ast_to_source(second).split() == ["def", "f2():", "pass", "f2.other", "=", "2"]
    assert ast_to_source(first).split() == ["def", "f1():", "nonlocal", "a", "a", "=", "1",
                                            "extra", "=", "0", "f1.attr", "=", "1"]
    assert first[0] is not second[0] and first[1].targets[0] is not second[1].targets[0]


def test_namer_avoids_user_names():
    namer = Namer.for_tree(ast.parse("__true_fn_0 = 1\ndef __true_fn_1(): pass"))
    assert namer.new("true_fn") == "__true_fn_2"
    assert namer.new("true_fn") == "__true_fn_3"


# ---- printing --------------------------------------------------------------------

def with_match(command):
    match command:
        case [action, obj]:
            result = f"{action} {obj}"
        case {"go": where, **rest}:
            result = f"go {where} {len(rest)}"
        case _:
            result = "unknown"
    if result == "unknown":
        result = result.upper()
    return result


def test_printing_falls_back_for_match():
    tree = ast.parse(inspect.getsource(with_match))
    src = ast_to_source(tree)
    assert "match command:" in src
    assert ast.dump(ast.parse(src)) == ast.dump(tree)


def test_function_with_match_converts():
    converted, source = convert_function(with_match)
    assert "match command:" in source
    for arg in (["take", "key"], {"go": "north", "x": 1}, 5):
        assert converted(arg) == with_match(arg)


def test_astor_used_for_plain_code():
    assert ast_to_source(ast.parse("x = (1 +\n 2)")) == "x = 1 + 2\n"


# ---- source loading ----------------------------------------------------------------

def test_exec_lambda_has_no_source():
    namespace = {}
    exec("f = lambda x: x + 1", namespace)
    with pytest.raises(SourceUnavailableError, match="lambda"):
        convert_function(namespace["f"])


def test_exec_def_has_no_source():
    namespace = {}
    exec("def made_by_exec(x):\n    return x\n", namespace)
    with pytest.raises(SourceUnavailableError, match="made_by_exec"):
        convert_function(namespace["made_by_exec"])


def test_builtin_has_no_source():
    with pytest.raises(SourceUnavailableError, match="len"):
        convert_function(len)


def test_lambda_in_file_converts():
    double_pos = lambda v: v * 2 if v > 0 else 0  # noqa: E731
    converted, source = convert_function(double_pos)
    assert "convert_ifelse_expr" in source
    assert converted.__name__ == "<lambda>"
    assert [converted(v) for v in (-1, 3)] == [0, 6]


def _decorator(fn):
    return fn


class _Holder:
    @staticmethod
    @_decorator
    def method_with_decorators(x):
        if x:
            return "t"
        return "f"


def test_decorated_method_and_bound_method():
    converted, source = convert_function(_Holder.method_with_decorators)
    assert "@" not in source
    assert converted(1) == "t" and converted(0) == "f"


def test_closure_cells_shared():
    count = 0

    def bump(n):
        nonlocal count
        for _ in range(n):
            count += 1
        return count

    converted, _ = convert_function(bump)
    assert converted(3) == 3
    assert count == 3  # the converted function writes the original cell


def test_defaults_kwdefaults_wrapped_cached():
    def f(a, b=2, *, c=3):
        return a + b + c
    converted, src = convert_function(f)
    assert converted(1) == 6 and converted(1, c=10) == 13
    assert converted.__wrapped__ is f and converted.__name__ == "f"
    assert convert_function(f)[0] is converted


def test_code_cache_shared_between_closures():
    def make(k):
        def g(x):
            return x + k
        return g
    g1, g2 = make(1), make(2)
    c1, c2 = convert_function(g1)[0], convert_function(g2)[0]
    assert c1.__code__ is c2.__code__
    assert (c1(0), c2(0)) == (1, 2)


# ---- error locations ---------------------------------------------------------------

def divide_in_branch(x):
    if x > 0:
        y = x / 0  # the failing line
    else:
        y = x
    return y


def test_error_location_names_user_line():
    converted, _ = convert_function(divide_in_branch)
    with pytest.raises(ZeroDivisionError) as info:
        converted(1)
    exc = rewrite_exception(info.value)
    assert type(exc) is ZeroDivisionError
    lines, start = inspect.getsourcelines(divide_in_branch)
    lineno = start + 2
    text = str(exc)
    assert f'File "{THIS_FILE}", line {lineno}, in divide_in_branch' in text
    assert "y = x / 0  # the failing line" in text
    assert rewrite_exception(exc) is exc  # idempotent


class _OddError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


def raise_odd(x):
    if x:
        raise _OddError(1, 2)
    return x


def test_error_location_as_note_when_type_cannot_be_rebuilt():
    converted, _ = convert_function(raise_odd)
    with pytest.raises(_OddError) as info:
        converted(1)
    exc = rewrite_exception(info.value)
    assert exc is info.value
    note = "\n".join(exc.__notes__)
    assert "raise _OddError(1, 2)" in note and THIS_FILE in note


# ---- unsupported syntax ------------------------------------------------------------

def gen(n):
    for i in range(n):
        yield i


async def coro():
    return 1


_G = 0


def global_write_in_branch(x):
    global _G
    if x:
        _G = x
    return _G


def global_write_outside_branch(x):
    global _G
    _G = x
    if x:
        y = _G
    else:
        y = 0
    return y


@pytest.mark.parametrize("fn,construct,line_text", [
    (gen, "yield", "yield i"),
    (coro, "async def", "async def coro():"),
])
def test_unsupported_syntax_error(fn, construct, line_text):
    with pytest.raises(UnsupportedSyntaxError) as info:
        convert_function(fn)
    msg = str(info.value)
    assert construct in msg and THIS_FILE in msg and line_text in msg
    lines, start = inspect.getsourcelines(fn)
    expected = start + next(i for i, l in enumerate(lines) if line_text in l)
    assert f"line {expected}" in msg


def test_global_write_in_a_python_valued_branch_converts():
    converted, _ = convert_function(global_write_in_branch)
    assert converted(7) == 7 and _G == 7
    assert converted(0) == 7 and _G == 7


def test_global_write_outside_converted_construct_is_fine():
    converted, _ = convert_function(global_write_outside_branch)
    assert converted(5) == 5 and _G == 5


def _reference_contains(nodes, kinds, stop):
    """Every node, expressions included, not entering `stop` nodes below the roots."""
    def under(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, kinds):
                return True
            if not isinstance(child, stop) and under(child):
                return True
        return False
    roots = nodes if isinstance(nodes, list) else [nodes]
    return any(isinstance(root, kinds) or under(root) for root in roots)


def test_contains_statement_kinds_matches_a_full_walk():
    # `contains` walks only statement lists for statement kinds; the answer
    # must be that of walking every node, for each stop rule.
    from d2s.convert.transformers.common import LOOP_NODES, SCOPE_NODES, contains
    source = '''
def f(x):
    while x:
        for i in x:
            if i:
                break
        else:
            continue
        try:
            return 1
        except E:
            def g():
                return 2
        finally:
            pass
    match x:
        case 1:
            lambda: 3
            with c:
                return 4
    class K:
        def m(self):
            return 5
'''
    fn = ast.parse(source).body[0]
    checked = 0
    for node in ast.walk(fn):
        if not isinstance(node, (ast.stmt, ast.excepthandler, ast.match_case)):
            continue
        for kinds in (ast.Return, ast.Break, ast.Continue, (ast.Break, ast.Continue)):
            for stop in (SCOPE_NODES, SCOPE_NODES + LOOP_NODES):
                for arg in (node, getattr(node, "body", None)):
                    if arg is None or not isinstance(arg, (list, ast.AST)):
                        continue
                    assert contains(arg, kinds, stop) == _reference_contains(arg, kinds, stop)
                    checked += 1
    assert checked > 100
